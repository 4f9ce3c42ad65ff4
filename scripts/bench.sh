#!/usr/bin/env bash
# Runs every benchmark suite (bench/suites/*.sh, in name order) and assembles bench/RESULTS.md.
# Each suite is called as `suite.sh BUILD_DIR OUT_DIR` and writes OUT_DIR/<suite>.md (a markdown
# section) and, optionally, charts into bench/charts/. A failing suite is reported, not fatal.
# BENCH_ONLY=name runs one suite; BENCH_QUICK=1 asks suites for shorter runs.
set -uo pipefail
build=$(realpath "${1:-build}")
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/bench/out"
mkdir -p "$out" "$root/bench/charts"
status=0
for suite in "$root"/bench/suites/*.sh; do
  name=$(basename "$suite" .sh)
  [ -n "${BENCH_ONLY:-}" ] && [ "$BENCH_ONLY" != "$name" ] && continue
  echo "== bench: $name"
  if ! bash "$suite" "$build" "$out"; then
    echo "bench suite $name failed" >&2
    printf '## %s\n\nThis suite failed in this run; see the console output.\n' "$name" > "$out/$name.md"
    status=1
  fi
done
{
  echo "# csgi benchmark results"
  echo
  echo "Written by \`make bench\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))," \
       "$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, $(. /etc/os-release; echo "$PRETTY_NAME")."
  echo "Every peer runs in the same run on the same machine, on loopback; ratios are csgi / peer."
  echo
  for section in "$out"/*.md; do
    [ -e "$section" ] || continue
    cat "$section"
    echo
  done
} > "$root/bench/RESULTS.md"
echo "wrote bench/RESULTS.md"
exit $status
