#!/bin/sh
# app.fcgi: what mod_fcgid starts. The FastCGI socket is fd 0; exec keeps it. Do not forward "$@".
# With the `csgi` command: exec csgi serve --fastcgi --app @APP@
exec @FCGI@ --app @APP@ --app-arg @APP_ARG@ --threads 2
