#!/usr/bin/env bash
# HTTP/3 benchmark: usage `bash h3.sh BUILD_DIR OUT_DIR`; writes OUT_DIR/h3.md.
#
# The same files (hello: the 13 B "Hello, world!", a 1 KB and a 1 MB file) served by:
#   csgi h3      csgi serve --demo --static DIR --tls-cert/--tls-key --http3 (hello: the demo app's /hello);
#   gtlsserver   Debian's ngtcp2 example server (ngtcp2-server) with -d DIR -q: it has no app, its hello
#                row is a static file of the same 13 bytes;
#   csgi h2-TLS  the same csgi serve, over HTTP/2 on TLS (TCP).
# Each server pinned to cpu0, the load generator to cpu1, one RSA-2048 certificate made here by openssl.
# Load: h3: ROUNDS rounds of CONNS gtlsclient connections in parallel, each with -n STREAMS requests of
# the path (-q --no-quic-dump --no-http-dump --exit-on-all-streams-close; a run counts only when every
# client exits 0, and one un-quiet connection per case is checked for STREAMS `:status: 200` lines);
# h2: h2load -n CONNS*ROUNDS*STREAMS -c CONNS*ROUNDS -m min(STREAMS,100): as many requests and handshakes.
# Figures per case: requests, req/s, the server's CPU µs per request (utime+stime from /proc over the
# run), the server's user-space instructions per request (perf stat -e instructions:u -p PID over the
# run; "-" when perf is not allowed) and the load generator's CPU µs per request (GNU time over it).
# BENCH_QUICK=1: fewer rounds.
set -uo pipefail
build=$(realpath "$1")
out=$(realpath "$2")
mkdir -p "$out"
md="$out/h3.md"
csgi="$build/adapters/cli/csgi"
rounds=10
if [ "${BENCH_QUICK:-0}" = 1 ]; then rounds=2; fi

. "$(dirname "$0")/lib/common.sh"
cmake --build "$build" --target csgi_cli -j2 >/dev/null 2>&1 || true
[ -x "$csgi" ] || fail_section "csgi is not built (cmake --build BUILD --target csgi_cli)."
command -v gtlsclient >/dev/null || fail_section "gtlsclient not found (Debian package ngtcp2-client)."
gtlsserver=$(command -v gtlsserver || echo /usr/sbin/gtlsserver)
[ -x "$gtlsserver" ] || fail_section "gtlsserver not found (Debian package ngtcp2-server)."
command -v h2load >/dev/null || fail_section "h2load not found (Debian package nghttp2-client)."
command -v openssl >/dev/null || fail_section "openssl not found."
[ -x /usr/bin/time ] || fail_section "/usr/bin/time not found (Debian package time)."
perf_ok=0
if command -v perf >/dev/null && perf stat -e instructions:u -x, true 2>&1 | grep -q '^[0-9]'; then perf_ok=1; fi

tmp=$(mktemp -d /tmp/csgi-bench-h3-XXXXXX)
# csgi's static dir has no hello (its /hello is the demo app's); gtlsserver's holds one of the same bytes.
mkdir -p "$tmp/site" "$tmp/gsite"
head -c 1024 /dev/urandom > "$tmp/site/1k.bin"
head -c 1048576 /dev/urandom > "$tmp/site/1m.bin"
cp "$tmp/site/1k.bin" "$tmp/site/1m.bin" "$tmp/gsite/"
printf 'Hello, world!' > "$tmp/gsite/hello"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 2 \
  -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >/dev/null 2>&1 ||
  fail_section "openssl could not make a certificate."
results="$tmp/results.tsv"
: > "$results"
spid=""
cleanup() {
  [ -n "$spid" ] && stop_pid "$spid"
  rm -rf "$tmp"
}
trap cleanup EXIT

# start_server NAME → sets $port and $spid
start_server() {
  port=$(free_port)
  case "$1" in
    csgi-h3 | csgi-h2)
      setsid taskset -c 0 "$csgi" serve --demo --static "$tmp/site" --listen "https://127.0.0.1:$port" \
        --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" --http3 --idle-timeout 120 >/dev/null 2>&1 &
      spid=$!
      wait_url "https://127.0.0.1:$port/hello" 100 || fail_section "csgi serve --http3 did not start."
      ;;
    gtlsserver)
      setsid taskset -c 0 "$gtlsserver" 127.0.0.1 "$port" "$tmp/key.pem" "$tmp/cert.pem" -d "$tmp/gsite" -q \
        >/dev/null 2>&1 &
      spid=$!
      ;;
  esac
  # The h3 servers answer one quiet-less connection before the run (and gtlsserver's readiness is seen so).
  local ok=0
  for _ in $(seq 40); do
    if [ "$1" = csgi-h2 ] || taskset -c 1 timeout 5 gtlsclient --no-quic-dump --exit-on-all-streams-close \
      --timeout=2s 127.0.0.1 "$port" "https://localhost:$port/hello" 2>&1 | grep -q ':status: 200'; then
      ok=1
      break
    fi
    sleep 0.1
  done
  [ "$ok" = 1 ] || fail_section "$1 did not answer over HTTP/3."
}

# h3_load PATH CONNS STREAMS: ROUNDS rounds of CONNS parallel gtlsclient connections; prints the number of
# clients that did not exit 0.
h3_load() {
  local path=$1 conns=$2 streams=$3 r c bad=0
  for r in $(seq "$rounds"); do
    local cpids=()
    for c in $(seq "$conns"); do
      timeout 60 gtlsclient -q --no-quic-dump --no-http-dump --exit-on-all-streams-close --timeout=10s \
        -n "$streams" 127.0.0.1 "$port" "https://localhost:$port$path" >/dev/null 2>&1 &
      cpids+=($!)
    done
    for c in "${cpids[@]}"; do wait "$c" || bad=$((bad + 1)); done
  done
  echo "$bad"
}

# run_case TEST SERVER PATH CONNS STREAMS
run_case() {
  local test=$1 server=$2 path=$3 conns=$4 streams=$5
  local total=$((conns * rounds * streams)) c0 c1 t0 t1 perfpid="" instr="-" gen bad=0 ok200 o
  if [ "$server" != csgi-h2 ]; then
    # One un-quiet connection: all STREAMS answered 200.
    ok200=$(taskset -c 1 timeout 60 gtlsclient --no-quic-dump --exit-on-all-streams-close --timeout=10s \
      -n "$streams" 127.0.0.1 "$port" "https://localhost:$port$path" 2>&1 |
      grep -o 'http: stream 0x[0-9a-f]* \[:status: 200' | sort -u | wc -l)
    [ "$ok200" = "$streams" ] || echo "h3 bench: $server $test: $ok200 of $streams streams answered 200" >&2
  fi
  if [ "$perf_ok" = 1 ]; then
    perf stat -e instructions:u -x, -o "$tmp/perf.txt" -p "$spid" &
    perfpid=$!
    sleep 0.3
  fi
  c0=$(tree_cpu_ticks "$spid")
  t0=$(date +%s.%N)
  if [ "$server" = csgi-h2 ]; then
    local m=$((streams < 100 ? streams : 100))
    o=$(/usr/bin/time -f 'GEN %U %S' taskset -c 1 timeout 120 h2load -n "$total" -c "$((conns * rounds))" \
      -m "$m" "https://127.0.0.1:$port$path" 2>&1)
    bad=$(( total - $(awk '/^status codes:/ {gsub(",", ""); print $3}' <<<"$o") ))
  else
    o=$( { /usr/bin/time -f 'GEN %U %S' taskset -c 1 bash -c "$(declare -f h3_load); rounds=$rounds port=$port; h3_load $path $conns $streams" >"$tmp/bad" ; } 2>&1)
    bad=$(cat "$tmp/bad")
  fi
  t1=$(date +%s.%N)
  c1=$(tree_cpu_ticks "$spid")
  if [ -n "$perfpid" ]; then
    kill -INT "$perfpid" 2>/dev/null
    wait "$perfpid" 2>/dev/null
    instr=$(awk -F, '/instructions/ {print $1}' "$tmp/perf.txt")
    instr=$(per_request "${instr:-0}" "$total")
  fi
  gen=$(awk '/^GEN/ {printf "%d", ($2 + $3) * 1e6}' <<<"$o")
  local rps cpu gcpu
  rps=$(awk -v n="$total" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", n / (b - a)}')
  cpu=$(per_request "$(ticks_us $((c1 - c0)))" "$total")
  gcpu=$(per_request "${gen:-0}" "$total")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$test" "$server" "$total" "$bad" "$rps" "$cpu" "$instr" "$gcpu" >> "$results"
  echo "  $server $test: $total requests ($bad failed), $rps req/s, $cpu µs server CPU/req, $instr instr/req, load generator $gcpu µs/req"
}

cases=("hello|/hello|4|1000" "1 KB file|/1k.bin|4|1000" "1 MB file|/1m.bin|2|10")
for server in csgi-h3 gtlsserver csgi-h2; do
  start_server "$server"
  for c in "${cases[@]}"; do
    IFS='|' read -r test path conns streams <<<"$c"
    run_case "$test" "$server" "$path" "$conns" "$streams"
  done
  stop_pid "$spid"
  spid=""
done

rev=$(git -C "$(dirname "$0")" log -1 --format=%h 2>/dev/null || echo "?")
/usr/bin/python3 - "$results" "$md" "$rounds" "$perf_ok" "csgi build: $rev; run $(date -u '+%Y-%m-%d %H:%M UTC')." <<'EOF'
import sys
results, md, rounds, perf_ok, when = sys.argv[1:]
rows = {(r[0], r[1]): r for r in (l.rstrip("\n").split("\t") for l in open(results) if l.strip())}
tests = []
for t, _ in rows:
    if t not in tests:
        tests.append(t)
def f(t, s, col):
    try:
        return float(rows[(t, s)][col])
    except (KeyError, ValueError):
        return None
def ratio(a, b):
    return "%.2f" % (a / b) if a and b else "-"
out = ["## h3", "",
       "HTTP/3: csgi serve --http3 (1 io thread) vs Debian's gtlsserver (ngtcp2 0.12 example server, GnuTLS) "
       "and csgi's own HTTP/2 over TLS, the same files and RSA-2048 certificate; server on cpu0, load generator on "
       "cpu1. h3 load: %s rounds of parallel `gtlsclient -n STREAMS` connections; h2 load: h2load with as many "
       "requests and connections. gtlsserver has no app: its hello is a static file of the same 13 bytes. "
       "Server CPU: utime+stime from /proc over the run; instructions: `perf stat -e instructions:u -p PID` "
       "over the run%s; load generator: GNU time over all its processes." %
       (rounds, "" if perf_ok == "1" else " (no hardware counters here: -)"), "",
       "The machine has 2 cores shared with other work: CPU per request (and instructions, where counted) "
       "are the comparable figures, req/s is noise; h3's req/s is bounded by gtlsclient, whose own CPU per "
       "request (last column) is larger than either server's. " + when, "",
       "| test | server | requests (failed) | req/s | server CPU µs/req | server instr/req | load gen CPU µs/req |",
       "|---|---|---|---|---|---|---|"]
for t in tests:
    for s in ("csgi-h3", "gtlsserver", "csgi-h2"):
        r = rows.get((t, s))
        if r:
            out.append("| %s | %s | %s (%s) | %s | %s | %s | %s |" % (t, s, r[2], r[3], r[4], r[5], r[6], r[7]))
out += ["", "Ratios (CPU µs per request; > 1 means csgi h3 spends less):", "",
        "| test | gtlsserver / csgi h3 (goal ≥ 1.0) | csgi h2-TLS / csgi h3 (goal ≥ 0.67) | instr: gtlsserver / csgi h3 |",
        "|---|---|---|---|"]
for t in tests:
    out.append("| %s | %s | %s | %s |" % (t, ratio(f(t, "gtlsserver", 5), f(t, "csgi-h3", 5)),
                                         ratio(f(t, "csgi-h2", 5), f(t, "csgi-h3", 5)),
                                         ratio(f(t, "gtlsserver", 6), f(t, "csgi-h3", 6))))
out.append("")
open(md, "w").write("\n".join(out))
print("\n".join(out))
EOF
