#!/bin/sh
# Starts a csgi app as a FastCGI server on a unix socket with spawn-fcgi, for nginx (nginx-csgi.conf).
# spawn-fcgi opens the socket and hands it to csgi-fcgi as fd 0; -n keeps it in the foreground (for a
# supervisor); SIGTERM stops it gracefully (requests in flight finish).
# The test suite runs this exact line with @…@ filled in:
#   @SOCKET@ socket path   @FCGI@ the csgi-fcgi runner   @APP@ the app library   @THREADS@ threads
#   @APP_ARG@ an argument for the app (drop --app-arg when the app takes none)
exec spawn-fcgi -n -s @SOCKET@ -M 0660 -- @FCGI@ --app @APP@ --app-arg @APP_ARG@ --threads @THREADS@
