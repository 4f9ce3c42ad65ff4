#!/usr/bin/env bash
# Installs the Debian 12 packages csgi needs to build, test and benchmark.
# Usage: scripts/install-deps.sh [run|build|deb|test|bench|all]   (default: all)
#   run    the libraries and tools the csgi programs and the Python module build with, and the demo's
#          ramda (make run)
#   build  run's, plus what the test suites and benchmarks compile against (every target of the tree)
#   deb    run's, plus what `make deb` packs with (dpkg-shlibdeps, file)
#   test   build's and deb's, plus the servers, clients and browsers the tests run against (make test)
#   bench  / all: test's, plus the benchmarks' peers (make bench; CI)
# Only missing packages are installed; needs root (or sudo) when something is missing.
set -euo pipefail

run_pkgs=(
  g++ cmake make pkg-config lld
  libboost-dev
  libfcgi-dev zlib1g-dev libbrotli-dev libcrypt-dev libssl-dev
  pybind11-dev python3-dev python3-pybind11 nlohmann-json3-dev libnghttp2-dev libsystemd-dev
  libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev
  node-ramda
  libperl-dev
)
build_pkgs=(
  "${run_pkgs[@]}" catch2 libbenchmark-dev libhiredis-dev
  ruby-dev
)
deb_pkgs=(
  "${run_pkgs[@]}" dpkg-dev file
)
test_pkgs=(
  man-db curl nginx-light apache2 libapache2-mod-fcgid lighttpd spawn-fcgi
  python3-pytest python3-gunicorn python3-flask python3-django
  uwsgi-core uwsgi-plugin-python3
  clang libclang-rt-14-dev chromium iproute2 wrk haproxy prometheus
  openssl nghttp2-client python3-h2 python3-websockets testssl.sh libnss3-tools ngtcp2-client
  python3-fastapi python3-starlette python3-uvicorn python3-hypercorn python3-httpx python3-uvloop
  python3-httptools python3-multipart redis-server
  libplack-perl libtest-tcp-perl starman libcatalyst-perl libcatalyst-devel-perl
  ruby-rack ruby-rack-test ruby-sinatra puma ruby-railties
)
bench_pkgs=(
  wrk apache2-utils h2o python3-matplotlib haproxy slowhttptest redis-server
  valgrind redis-tools ngtcp2-server time
)

case "${1:-all}" in
  run) want=("${run_pkgs[@]}") ;;
  build) want=("${build_pkgs[@]}") ;;
  deb) want=("${deb_pkgs[@]}") ;;
  test) want=("${build_pkgs[@]}" "${deb_pkgs[@]}" "${test_pkgs[@]}") ;;
  bench|all) want=("${build_pkgs[@]}" "${deb_pkgs[@]}" "${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
  *) echo "usage: $0 [run|build|deb|test|bench|all]" >&2; exit 2 ;;
esac

missing=()
# Node.js: the machine image may carry its own build with npm bundled; use Debian's only when none.
case "${1:-all}" in run|build|deb) ;; *) command -v npm >/dev/null 2>&1 || want+=(nodejs npm) ;; esac
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
# Servers must not start (or stay running) as system services: tests start their own copies.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
