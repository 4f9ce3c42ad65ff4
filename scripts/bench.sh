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
ran=()
failed=()
for suite in "$root"/bench/suites/*.sh; do
  name=$(basename "$suite" .sh)
  [ -n "${BENCH_ONLY:-}" ] && [ "$BENCH_ONLY" != "$name" ] && continue
  echo "== bench: $name"
  if ! bash "$suite" "$build" "$out"; then
    echo "bench suite $name failed" >&2
    status=1
    failed+=("$name")
    continue
  fi
  ran+=("$name")
done
# Each suite's section sits between <!-- suite: NAME --> markers in RESULTS.md: a suite run now replaces its
# section; a suite not run (BENCH_ONLY, or a failure) keeps the section of an earlier run.
ran=" ${ran[*]} " failed=" ${failed[*]} "
results="$root/bench/RESULTS.md"
how="make bench"
[ -n "${BENCH_ONLY:-}" ] && how="BENCH_ONLY=$BENCH_ONLY $how"
[ "${BENCH_QUICK:-0}" = 1 ] && how="BENCH_QUICK=1 $how"
previous() {  # NAME: the section of an earlier run, markers excluded
  [ -f "$results" ] || return 0
  awk -v b="<!-- suite: $1 -->" -v e="<!-- /suite: $1 -->" '$0 == e {on = 0} on {print} $0 == b {on = 1}' "$results"
}
{
  echo "# csgi benchmark results"
  echo
  echo "Every peer runs in the same run on the same machine, on loopback; ratios are csgi / peer. Each section"
  echo "says when and where it was measured (\`make bench\` runs all; \`BENCH_ONLY=name\` one)."
  echo
  for suite in "$root"/bench/suites/*.sh; do
    name=$(basename "$suite" .sh)
    if [[ "$ran" == *" $name "* ]]; then
      section=$(cat "$out/$name.md"; echo
                echo "_Measured by \`$how\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), $(. /etc/os-release; echo "$PRETTY_NAME")._")
    else
      section=$(previous "$name")
      if [[ "$failed" == *" $name "* ]]; then
        note="_This suite failed in the run of $(date -u '+%Y-%m-%d %H:%M UTC') (see its console output)"
        if [ -n "$section" ]; then
          section=$(awk -v note="$note; the figures below are from an earlier run._" \
                      'NR == 1 {print; print ""; print note; next} {print}' <<<"$section")
        else
          section=$(printf '## %s\n\n%s._' "$name" "$note")
        fi
      fi
    fi
    [ -n "$section" ] || continue
    printf '<!-- suite: %s -->\n%s\n<!-- /suite: %s -->\n\n' "$name" "$section" "$name"
  done
} > "$results.new"
mv "$results.new" "$results"
echo "wrote bench/RESULTS.md"
exit $status
