#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan + UBSan (build-fuzz/, optimized; or the tree FUZZ_BUILD
# names, configured with CSGI_FUZZ=ON) and fuzzes each from its seed corpus with the HTTP dictionary, for
# at most FUZZ_SECONDS (default 60). The time a target gets follows what it finds: it runs in rounds of
# FUZZ_ROUND seconds (default 10) on one working corpus, and stops after a round that reached no new
# coverage edge, or when its FUZZ_SECONDS are spent. A crash is copied to tests/fuzz/regressions/<target>/
# (replayed by ctest in every build) and fails the run.
# FUZZ_ONLY="name …" runs only those targets; FUZZ_RUNS=N stops each target after N execs instead (one
# round, with FUZZ_SECONDS as a time cap); FUZZ_MAX_LEN caps the input size; FUZZ_JOBS=N runs N targets at
# once (default: one per core). Prints seconds used, execs and coverage per target.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${FUZZ_SECONDS:-60}
round=${FUZZ_ROUND:-10}
[ -n "${FUZZ_RUNS:-}" ] && round=$seconds
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
  local t=$1 work log rc=0 execs=0 rate cov=? used=0 result n before after left slice
  work=$(mktemp -d)
  cp -r "$root/tests/fuzz/corpus/$t/." "$work/" 2>/dev/null
  log="$build/$t.log"
  : >"$log"
  while [ "$used" -lt "$seconds" ]; do
    slice=$round
    left=$((seconds - used))
    [ "$slice" -gt "$left" ] && slice=$left
    (cd "$work" && ASAN_OPTIONS=detect_leaks=1 "$build/tests/fuzz/$t" -max_total_time="$slice" $runs $max_len -timeout=10 -rss_limit_mb=2048 \
       -dict="$root/tests/fuzz/http.dict" -print_final_stats=1 "$work" >"$log.round" 2>&1)
    rc=$?
    cat "$log.round" >>"$log"
    used=$((used + slice))
    n=$(grep -m1 'stat::number_of_executed_units' "$log.round" | awk '{print $2}')
    execs=$((execs + ${n:-0}))
    before=$(grep -m1 -E 'INITED.*cov:' "$log.round" | sed -E 's/.*cov: ([0-9]+).*/\1/')
    after=$(grep -E '(DONE|pulse|NEW|REDUCE).*cov:' "$log.round" | tail -1 | sed -E 's/.*cov: ([0-9]+).*/\1/')
    cov=${after:-${before:-?}}
    [ $rc -ne 0 ] && break
    # A round that reached no new edge ends the target's fuzzing.
    [ -n "$before" ] && [ -n "$after" ] && [ "$after" -le "$before" ] && break
  done
  rm -f "$log.round"
  rate=$((execs / (used > 0 ? used : 1)))
  result=ok
  if [ $rc -ne 0 ]; then
    result="CRASH (see $log)"
    mkdir -p "$root/tests/fuzz/regressions/$t"
    for c in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do [ -e "$c" ] && cp "$c" "$root/tests/fuzz/regressions/$t/"; done
  fi
  printf '| %s | %s (%s) | %s | %s | %s | %s |\n' "$t" "$used" "$seconds" "$execs" "$rate" "$cov" "$result" >"$build/$t.row"
  rm -rf "$work"
}
for t in $targets; do
  rm -f "$build/$t.row"
  run_one "$t" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
done
wait
status=0
printf '| target | seconds used (limit) | execs | exec/s | coverage (edges) | result |\n|---|---|---|---|---|---|\n'
for t in $targets; do
  if [ -f "$build/$t.row" ]; then cat "$build/$t.row"; else printf '| %s | | | | | no result |\n' "$t"; fi
  grep -q '| ok |$' "$build/$t.row" 2>/dev/null || status=1
done
exit $status
