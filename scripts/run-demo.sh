#!/usr/bin/env bash
# Starts the demo server on 127.0.0.1:5000 (see README).
set -euo pipefail
build=${1:-build}
exec "$build/adapters/cli/csgi" serve --demo --listen 127.0.0.1:5000
