#!/usr/bin/env bash
# Starts the demo server on http://127.0.0.1:5000/ (see README):
#   /          the bundler demo page (static file) loading CommonJS modules through /bundle
#   /hello     hello world          /env     the request env         /stream  a streamed response
#   /bundle/…  module bundles (the client loader at /bundle/require.js)
#   scripts/run-demo.sh [BUILD_DIR [csgi serve options...]]; CSGI_DEMO_LISTEN overrides 127.0.0.1:5000.
set -euo pipefail
build=${1:-build}
[ $# -gt 0 ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
demo="$root/examples/bundler"
# The page uses npm's ramda; fetch it once (the page says so if it could not be fetched).
if [ ! -d "$demo/node_modules/ramda" ] && command -v npm >/dev/null 2>&1; then
  npm install --silent --no-audit --no-fund --prefix "$demo" ramda@0.31.3 >/dev/null 2>&1 ||
    echo "run-demo: npm could not fetch ramda; the page at / will report the missing module" >&2
fi
exec "$build/adapters/cli/csgi" serve --demo --bundle "$demo" --static "$demo" --listen "${CSGI_DEMO_LISTEN:-127.0.0.1:5000}" "$@"
