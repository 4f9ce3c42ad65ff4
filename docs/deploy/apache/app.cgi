#!/bin/sh
# app.cgi: what mod_cgi runs for each request. Do not forward "$@" (Apache passes a query string without
# '=' as arguments).
exec @CGI@ --app @APP@ --app-arg @APP_ARG@
