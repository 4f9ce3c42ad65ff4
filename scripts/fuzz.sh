#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan + UBSan (build-fuzz/, optimized; or the tree FUZZ_BUILD
# names, configured with CSGI_FUZZ=ON) and runs each for FUZZ_SECONDS (default 60) from its seed corpus
# with the HTTP dictionary. A crash is copied to
# tests/fuzz/regressions/<target>/ (replayed by ctest in every build) and fails the run.
# FUZZ_ONLY="name …" runs only those targets; FUZZ_RUNS=N stops each target after N execs instead (with
# FUZZ_SECONDS as a time cap); FUZZ_MAX_LEN caps the input size; FUZZ_JOBS=N runs N targets at once
# (default: one per core). Prints execs and coverage per target.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${FUZZ_SECONDS:-60}
runs=${FUZZ_RUNS:+-runs=$FUZZ_RUNS}
max_len=${FUZZ_MAX_LEN:+-max_len=$FUZZ_MAX_LEN}
if [ -n "${FUZZ_BUILD:-}" ]; then
  # A tree configured for fuzzing already (the AddressSanitizer tree of `make test-asan` is).
  build=$(cd "$FUZZ_BUILD" && pwd) || exit 1
  grep -q '^CSGI_FUZZ:BOOL=ON' "$build/CMakeCache.txt" || { echo "$build is not configured with CSGI_FUZZ=ON" >&2; exit 1; }
else
  build="$root/build-fuzz"
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCSGI_FUZZ=ON -DCSGI_SANITIZE=address,undefined \
    -DCSGI_BUILD_BENCH=OFF -DCSGI_PYTHON=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
fi
targets=$(cd "$root/tests/fuzz" && ls fuzz_*.cpp | sed 's/\.cpp$//')
[ -n "${FUZZ_ONLY:-}" ] && targets=$FUZZ_ONLY
cmake --build "$build" -j"$(nproc)" --target $targets >/dev/null || { echo "fuzz build failed" >&2; exit 1; }
jobs=${FUZZ_JOBS:-$(nproc)}
# One target: its row of the table goes to $build/<target>.row; a crash is kept as a regression input.
run_one() {
  local t=$1 work log rc execs rate cov result
  work=$(mktemp -d)
  cp -r "$root/tests/fuzz/corpus/$t/." "$work/" 2>/dev/null
  log="$build/$t.log"
  (cd "$work" && ASAN_OPTIONS=detect_leaks=1 "$build/tests/fuzz/$t" -max_total_time="$seconds" $runs $max_len -timeout=10 -rss_limit_mb=2048 \
     -dict="$root/tests/fuzz/http.dict" -print_final_stats=1 "$work" >"$log" 2>&1)
  rc=$?
  execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
  rate=$(grep -m1 'stat::average_exec_per_sec' "$log" | awk '{print $2}')
  cov=$(grep -E '(DONE|pulse|NEW).*cov:' "$log" | tail -1 | sed -E 's/.*cov: ([0-9]+).*/\1/')
  result=ok
  if [ $rc -ne 0 ]; then
    result="CRASH (see $log)"
    mkdir -p "$root/tests/fuzz/regressions/$t"
    for c in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do [ -e "$c" ] && cp "$c" "$root/tests/fuzz/regressions/$t/"; done
  fi
  printf '| %s | %s | %s | %s | %s | %s |\n' "$t" "$seconds" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$result" >"$build/$t.row"
  rm -rf "$work"
}
for t in $targets; do
  rm -f "$build/$t.row"
  run_one "$t" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
done
wait
status=0
printf '| target | seconds (limit) | execs | exec/s | coverage (edges) | result |\n|---|---|---|---|---|---|\n'
for t in $targets; do
  if [ -f "$build/$t.row" ]; then cat "$build/$t.row"; else printf '| %s | | | | | no result |\n' "$t"; fi
  grep -q '| ok |$' "$build/$t.row" 2>/dev/null || status=1
done
exit $status
