#!/usr/bin/env bash
# `make test-reliability`: the long reliability runs, each reproducible on its own:
#   fuzzing (FUZZ_SECONDS per target), the bad-request corpus with the nginx differential, faults,
#   hostile clients, a 10-minute soak under ASan/LSan (SOAK_SECONDS), and scale-out behind HAProxy and
#   nginx in network namespaces (root).
# Writes the tables to docs/reliability-results.md; exits non-zero if any part failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-build}")
csgi="$build/adapters/cli/csgi"
app="$build/tests/reliability/libcanary_app.so"
out="$root/docs/reliability-results.md"
tmp=$(mktemp -d)
status=0
part() { echo; echo "== $1"; }
{
  echo "# Reliability results"
  echo
  echo "Written by \`make test-reliability\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores. See docs/reliability.md."
} > "$out"

part "fuzzing (${FUZZ_SECONDS:=60} s per target)"
if FUZZ_SECONDS=$FUZZ_SECONDS "$root/scripts/fuzz.sh" > "$tmp/fuzz.md"; then :; else status=1; fi
cat "$tmp/fuzz.md"
printf '\n## Fuzzing (%s s per target)\n\n' "$FUZZ_SECONDS" >> "$out"; cat "$tmp/fuzz.md" >> "$out"

part "bad-request corpus, direct and through nginx"
/usr/bin/python3 "$root/tests/reliability/run_corpus.py" --csgi "$csgi" --app "$app" --nginx --quiet \
  --markdown "$tmp/corpus.md" > "$tmp/corpus.txt" || status=1
tail -n 60 "$tmp/corpus.txt"
{ printf '\n## Bad-request corpus\n\n'; tail -n 1 "$tmp/corpus.md"; printf '\nWhere nginx (as a reverse proxy in front) decides differently:\n\n';
  sed -n '/^| case |/,$p' "$tmp/corpus.txt"; } >> "$out"

part "faults"
/usr/bin/python3 "$root/tests/reliability/faults.py" --csgi "$csgi" --app "$app" --markdown "$tmp/faults.md" || status=1
{ printf '\n## Faults\n\n'; cat "$tmp/faults.md"; } >> "$out"

part "hostile clients"
/usr/bin/python3 "$root/tests/reliability/hostile.py" --csgi "$csgi" --app "$app" --markdown "$tmp/hostile.md" || status=1
{ printf '\n## Hostile clients (slowhttptest)\n\n'; cat "$tmp/hostile.md"; } >> "$out"

part "ASan/LSan soak (${SOAK_SECONDS:=600} s at half load)"
"$root/scripts/test-sanitized.sh" address,undefined "$root/build-asan" csgi_cli canary_app >/dev/null || status=1
/usr/bin/python3 "$root/tests/reliability/soak.py" --csgi "$root/build-asan/adapters/cli/csgi" \
  --app "$root/build-asan/tests/reliability/libcanary_app.so" --seconds "$SOAK_SECONDS" --markdown "$tmp/soak.md" || status=1
{ printf '\n## Soak under AddressSanitizer/LeakSanitizer\n\n'; cat "$tmp/soak.md" 2>/dev/null; } >> "$out"

part "scale-out"
/usr/bin/python3 "$root/tests/reliability/scaleout.py" --csgi "$csgi" --app "$app" --markdown "$tmp/scaleout.md" || status=1
{ printf '\n## Scale-out behind HAProxy and nginx (3 hosts in network namespaces)\n\n'; cat "$tmp/scaleout.md" 2>/dev/null; } >> "$out"

echo; echo "wrote $out"
exit $status
