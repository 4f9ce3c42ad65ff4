#!/usr/bin/env bash
# Builds some test suites with a sanitizer in their own build tree and runs them.
#   scripts/test-sanitized.sh SANITIZERS BUILD_DIR TEST...
# e.g. scripts/test-sanitized.sh address,undefined build-asan core_tests middleware_tests
# Each TEST is both a CMake target and a CTest name (a target without a test of that name is only built);
# fuzz replay tests (fuzz_<x>_replay) are run for every fuzz_<x> target named; ctest:NAME is a CTest name
# only (a test whose programs are built by other targets named).
set -euo pipefail
san=$1 build=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
# CMake keeps the compiler a tree was first configured with: a tree of another compiler than CXX starts over.
if [ -n "${CXX:-}" ] && [ -f "$build/CMakeCache.txt" ] &&
   ! grep -qx "CMAKE_CXX_COMPILER:[A-Z]*=$(command -v "$CXX")" "$build/CMakeCache.txt"; then
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
# Line tables are all a report needs (-g1): a third less to compile than full debug information.
# SANITIZE_CMAKE_ARGS adds configure options (CC/CXX choose the compiler).
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1 \
  -DCSGI_SANITIZE="$san" -DCSGI_BUILD_BENCH=OFF -DCSGI_PYTHON=OFF ${SANITIZE_CMAKE_ARGS:-} >/dev/null
targets=()
names=()
for t in "$@"; do
  case "$t" in
    ctest:*) names+=("${t#ctest:}") ;;
    fuzz_*) targets+=("$t"); names+=("${t}_replay") ;;
    *) targets+=("$t"); names+=("$t") ;;
  esac
done
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
regex="^($(IFS='|'; echo "${names[*]}"))\$"
# ASan/LSan and TSan reports go to a file per process (<tool>.<pid>) under $reports instead of stderr,
# and are printed at the end: many socket tests start `csgi serve` with its stderr discarded, and a report
# from a server (or a forked worker) whose exit status no test looks at must still fail the run. (With
# GCC, UBSan beside ASan ignores log_path: its reports stay on stderr, and halt_on_error ends the process.)
reports=$(cd "$build" && pwd)/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}:log_path=$reports/asan
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}:log_path=$reports/ubsan
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}:log_path=$reports/tsan
# A test that sets no TIMEOUT of its own gets 900 s: a hang fails the run instead of holding it.
status=0
# TEST_JOBS tests at a time (2, as in `make test`); a test that fails is run once more, but a sanitizer
# report from either run fails the run (below).
ctest --test-dir "$build" -j"${TEST_JOBS:-2}" --output-on-failure --timeout 900 --repeat until-pass:2 -R "$regex" ||
  status=$?
if compgen -G "$reports/*" >/dev/null; then
  for f in "$reports"/*; do
    echo "=== $f"
    cat "$f"
  done
  echo "sanitizer reports above (kept in $reports)" >&2
  status=1
fi
exit "$status"
