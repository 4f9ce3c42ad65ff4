#!/usr/bin/env bash
# PSGI benchmark, per core: `bash perl.sh BUILD_DIR OUT_DIR` writes OUT_DIR/perl.md. Each PSGI app is served
# by `csgi serve --psgi` and by Starman --workers 1, each server confined to cpu 0 (taskset -c 0) and wrk to
# cpu 1, the two servers of an app run alternately, run for run. The comparable figure on a shared machine
# is the server's CPU time per request (utime+stime of its processes over its wrk runs / requests served);
# req/s is shown beside it. Apps: a PSGI hello, a Plack::Request form app (a urlencoded POST parsed), and
# the Catalyst application of tests/bindings/perl/catalyst (its form page).
# wrk keeps 8 connections (-c8); the hello is measured with one (-c1) too, where every request waits for
# the previous one and csgi's io thread and perl thread hand each request over with nothing to batch.
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath "${2:-bench/out}")
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
md="$out/perl.md"
. "$(dirname "$0")/lib/common.sh"
dur=5; [ "${BENCH_QUICK:-0}" = 1 ] && dur=2
reps=${BENCH_REPS:-3}
csgi_bin="$build/adapters/cli/csgi"
perl_dir="$build/bindings/perl/lib"
[ -x "$csgi_bin" ] && [ -f "$perl_dir/auto/CSGI/CSGI.so" ] || fail_section "Not run: build csgi_cli and csgi_perl first."
command -v starman >/dev/null || fail_section "Not run: starman is not installed."
command -v wrk >/dev/null || fail_section "Not run: wrk is not installed."
pin_s=(); pin_w=()
command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ] && { pin_s=(taskset -c 0); pin_w=(taskset -c 1); }
work=$(mktemp -d)
declare -A PID PORT URL CONNS LUA CMD CPU RPS ALL
kill_servers() { local k; for k in "${!PID[@]}"; do stop_pid "${PID[$k]}"; done; PID=(); }
trap 'kill_servers; rm -rf "$work"' EXIT
export PERL5LIB="$root/tests/bindings/perl/catalyst/lib:$perl_dir"

cat > "$work/hello.psgi" <<'PERLEOF'
sub { [200, ['Content-Type' => 'text/plain', 'Content-Length' => 13], ['Hello, World!']] };
PERLEOF
cat > "$work/form.psgi" <<'PERLEOF'
use Plack::Request;
sub {
    my $req = Plack::Request->new(shift);
    my $p = $req->body_parameters;
    my $body = join '', map { "$_=" . $p->get($_) . "\n" } sort $p->keys;
    return [200, ['Content-Type' => 'text/plain; charset=utf-8'], [$body]];
};
PERLEOF
cat > "$work/form.lua" <<'LUAEOF'
wrk.method = "POST"
wrk.body = "name=csgi&email=a%40example.org&message=Hello+there%2C+world&topic=bench&count=42"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
LUAEOF

# serve KEY CONNS PATH LUA cmd... (PORT in cmd is the port): starts a server pinned to cpu 0.
serve() {
  local key=$1 conns=$2 path=$3 lua=$4; shift 4
  local port; port=$(free_port)
  local argv=("${@//PORT/$port}")
  (cd "$work" && exec setsid "${pin_s[@]}" "${argv[@]}" >"$work/$key.log" 2>&1) &
  PID[$key]=$!; PORT[$key]=$port; URL[$key]="http://127.0.0.1:$port$path"; CONNS[$key]=$conns; LUA[$key]=$lua
  local shown="${*//$build/BUILD}"
  CMD[$key]="${pin_s[*]} ${shown//$root/.}"
  if ! wait_url "${URL[$key]}"; then cat "$work/$key.log" >&2; stop_pid "${PID[$key]}"; unset "PID[$key]"; RPS[$key]=failed; CPU[$key]=-; fi
}
# measure KEY...: $reps rounds of one wrk run per server in turn; the median req/s and the CPU µs per
# request over all its runs. Then stops those servers.
measure() {
  local key round r ticks0 ticks1
  declare -A ticks=() reqs=()
  for round in $(seq "$reps"); do
    for key in "$@"; do
      [ -n "${PID[$key]:-}" ] || continue
      ticks0=$(tree_cpu_ticks "${PID[$key]}")
      local lua=(); [ -n "${LUA[$key]}" ] && lua=(-s "$work/${LUA[$key]}")
      r=$("${pin_w[@]}" wrk -t1 -c"${CONNS[$key]}" -d"${dur}s" "${lua[@]}" "${URL[$key]}" 2>&1 | awk '
        /requests in/ {n=$1} /Requests\/sec/ {rps=$2} /Non-2xx/ {bad=1} END {print (bad ? "bad" : rps), n}')
      ticks1=$(tree_cpu_ticks "${PID[$key]}")
      ticks[$key]=$(( ${ticks[$key]:-0} + ticks1 - ticks0 ))
      reqs[$key]=$(( ${reqs[$key]:-0} + ${r#* } ))
      ALL[$key]+=" ${r% *}"
    done
  done
  for key in "$@"; do
    [ -n "${PID[$key]:-}" ] || continue
    stop_pid "${PID[$key]}"; unset "PID[$key]"
    RPS[$key]=$(tr ' ' '\n' <<<"${ALL[$key]}" | grep -v '^$' | median)
    CPU[$key]=$(awk -v t="${ticks[$key]}" -v n="${reqs[$key]}" -v hz="$(getconf CLK_TCK)" \
      'BEGIN {if (n > 0) printf "%.1f", t * 1e6 / hz / n; else print "-"}')
    echo "  $key: ${RPS[$key]} req/s (runs:${ALL[$key]}), ${CPU[$key]} µs CPU/request"
  done
}
# tree_cpu_ticks of setsid's process: setsid forks when it leads a process group already; the server is
# then its child. Starman's worker is a child of its master: both counted.
S=(starman --workers 1 --max-requests 100000000 --listen 127.0.0.1:PORT)
C=("$csgi_bin" serve --listen 127.0.0.1:PORT --psgi)

echo "perl bench (${dur}s runs x$reps, servers on cpu 0, wrk on cpu 1)"
serve csgi_hello 8 / "" "${C[@]}" hello.psgi
serve starman_hello 8 / "" "${S[@]}" hello.psgi
measure csgi_hello starman_hello
serve csgi_hello_c1 1 / "" "${C[@]}" hello.psgi
serve starman_hello_c1 1 / "" "${S[@]}" hello.psgi
measure csgi_hello_c1 starman_hello_c1
serve csgi_form 8 / form.lua "${C[@]}" form.psgi
serve starman_form 8 / form.lua "${S[@]}" form.psgi
measure csgi_form starman_form
cat_app="$root/tests/bindings/perl/catalyst/diffapp.psgi"
serve csgi_catalyst 8 '/form?x=1&y=2' "" "${C[@]}" "$cat_app"
serve starman_catalyst 8 '/form?x=1&y=2' "" "${S[@]}" "$cat_app"
measure csgi_catalyst starman_catalyst

# Instructions per request, which the machine's load does not move: each server runs under callgrind (its
# children traced: Starman's worker) from start to exit, twice, serving N1 and then N2 requests
# (`ab -k -c 8`); (Ir(N2) - Ir(N1)) / (N2 - N1), so that start-up and shutdown cancel out. User space only.
declare -A INSTR
instr_total() {  # N PATH POSTFILE cmd... → the instructions of the run
  local n=$1 path=$2 post=$3; shift 3
  local port; port=$(free_port)
  local dir; dir=$(mktemp -d -p "$work")
  local argv=("${@//PORT/$port}")
  (cd "$work" && exec setsid valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$dir/cg.%p" \
     "${argv[@]}" >"$dir/log" 2>&1) &
  local p=$!
  wait_url "http://127.0.0.1:$port$path" 1200 || { cat "$dir/log" >&2; stop_pid "$p"; echo 0; return; }
  local body=(); [ -n "$post" ] && body=(-p "$work/$post" -T application/x-www-form-urlencoded)
  ab -q -k -c 8 -n "$n" "${body[@]}" "http://127.0.0.1:$port$path" >"$dir/ab" 2>&1
  kill -TERM -- "-$p" 2>/dev/null
  for _ in $(seq 600); do pgrep -g "$p" >/dev/null || break; sleep 0.1; done  # every process has dumped
  wait "$p" 2>/dev/null
  cat "$dir"/cg.* 2>/dev/null | awk '/^summary:/ {s += $2} END {printf "%.0f\n", s}'
}
instr() {  # KEY N1 N2 PATH POSTFILE cmd...
  local key=$1 n1=$2 n2=$3; shift 3
  local i1 i2
  i1=$(instr_total "$n1" "$@"); i2=$(instr_total "$n2" "$@")
  INSTR[$key]=$(awk -v a="$i1" -v b="$i2" -v n="$((n2 - n1))" 'BEGIN {if (a > 0 && b > a) printf "%.0f", (b - a) / n; else print "-"}')
  echo "  $key: ${INSTR[$key]} instructions/request"
}
if command -v valgrind >/dev/null && command -v ab >/dev/null; then
  q=1; [ "${BENCH_QUICK:-0}" = 1 ] && q=2
  printf '%s' "name=csgi&email=a%40example.org&message=Hello+there%2C+world&topic=bench&count=42" > "$work/form.body"
  instr csgi_hello $((500 / q)) $((2500 / q)) / "" "${C[@]}" hello.psgi
  instr starman_hello $((500 / q)) $((2500 / q)) / "" "${S[@]}" hello.psgi
  instr csgi_form $((500 / q)) $((2500 / q)) / form.body "${C[@]}" form.psgi
  instr starman_form $((500 / q)) $((2500 / q)) / form.body "${S[@]}" form.psgi
  instr csgi_catalyst $((100 / q)) $((500 / q)) '/form?x=1&y=2' "" "${C[@]}" "$cat_app"
  instr starman_catalyst $((100 / q)) $((500 / q)) '/form?x=1&y=2' "" "${S[@]}" "$cat_app"
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.2f×", a / b; else print "-"}'; }
row() {  # app, csgi key, starman key
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$1" "${RPS[$2]}" "${RPS[$3]}" "$(ratio "${RPS[$2]}" "${RPS[$3]}")" \
    "${CPU[$2]}" "${CPU[$3]}" "$(ratio "${CPU[$3]}" "${CPU[$2]}")"
}
{
  echo "## perl"
  echo
  echo "PSGI apps per core: \`csgi serve --psgi\` against Starman --workers 1, each server on cpu 0 (\`taskset -c 0\`),"
  echo "\`taskset -c 1 wrk -t1 -c8 -d${dur}s\` (\`-c1\` where said), the two servers of an app alternating, $reps runs"
  echo "each (median req/s). **CPU µs per request** (utime+stime of the"
  echo "server's processes over its runs / requests served) is the figure to compare on a shared machine; the"
  echo "CPU ratio is Starman's CPU per request over csgi's (> 1: csgi spends less)."
  echo
  echo "| app | csgi req/s | Starman req/s | req/s ratio | csgi CPU µs/req | Starman CPU µs/req | CPU ratio |"
  echo "|---|---|---|---|---|---|---|"
  row "PSGI hello" csgi_hello starman_hello
  row "PSGI hello, one connection (-c1)" csgi_hello_c1 starman_hello_c1
  row "Plack::Request form (urlencoded POST, 5 fields)" csgi_form starman_form
  row "Catalyst (tests/bindings/perl/catalyst, /form?x=1&y=2)" csgi_catalyst starman_catalyst
  echo
  if [ -n "${INSTR[csgi_hello]:-}" ]; then
    echo "User-space instructions per request (callgrind, Starman's worker included; see the script):"
    echo
    echo "| app | csgi | Starman | ratio |"
    echo "|---|---|---|---|"
    for app in hello form catalyst; do
      printf '| %s | %s | %s | %s |\n' "$app" "${INSTR[csgi_$app]}" "${INSTR[starman_$app]}" \
        "$(ratio "${INSTR[starman_$app]}" "${INSTR[csgi_$app]}")"
    done
    echo
  fi
  echo "With one connection each request waits for the one before: csgi's io thread hands it to the perl thread"
  echo "and takes the answer back, two thread wake-ups a request with nothing to batch, while Starman's worker"
  echo "reads and writes the socket itself."
  echo
  echo "Commands (PORT free, apps in bench/suites/perl.sh):"
  echo
  for key in csgi_hello starman_hello csgi_form starman_form csgi_catalyst starman_catalyst; do
    echo "- $key: \`${CMD[$key]}\`"
  done
} > "$md"
echo "wrote $md"
