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
# The page uses ramda: npm's when there is npm, else Debian's node-ramda (scripts/install-deps.sh run), copied
# into the page's node_modules/ once (the page says so if neither was there). Debian's (0.28) exports its
# folders as "./src/": "./src/", a form Node 17 dropped and the bundler does not read (docs/bundler.md,
# one-* patterns): the copy's package.json says "./src/*": "./src/*.js" instead.
if [ ! -d "$demo/node_modules/ramda" ]; then
  if command -v npm >/dev/null 2>&1; then
    npm install --silent --no-audit --no-fund --prefix "$demo" ramda@0.31.3 >/dev/null 2>&1 ||
      echo "run-demo: npm could not fetch ramda; the page at / will report the missing module" >&2
  elif [ -f /usr/share/nodejs/ramda/package.json ]; then
    mkdir -p "$demo/node_modules"
    cp -r /usr/share/nodejs/ramda "$demo/node_modules/ramda"
    python3 - "$demo/node_modules/ramda/package.json" <<'EOF'
import json, sys
manifest = json.load(open(sys.argv[1]))
folders = {k: v for k, v in manifest.get("exports", {}).items() if k.endswith("/") and v.endswith("/")}
for k, v in folders.items():
    del manifest["exports"][k]
    manifest["exports"][k + "*"] = v + "*.js"
json.dump(manifest, open(sys.argv[1], "w"), indent=2)
EOF
  fi
fi
exec "$build/adapters/cli/csgi" serve --demo --bundle "$demo" --static "$demo" --listen "${CSGI_DEMO_LISTEN:-127.0.0.1:5000}" "$@"
