#!/usr/bin/env bash
# TLS benchmark: usage `bash tls.sh BUILD_DIR OUT_DIR`; writes OUT_DIR/tls.md.
#
# csgi serve --demo --static DIR --tls-cert/--tls-key (1 io thread) side by side with nginx `ssl` (1
# worker, `return 200` and static files) on the same RSA-2048 certificate made here by the openssl command,
# the same protocols (TLS 1.2 and 1.3) and Mozilla "intermediate" ciphers; each server pinned to cpu0, wrk
# to cpu1, rounds alternated in the same run:
#   HTTPS/1.1 keep-alive hello 13 B   `wrk -t1 -c50`;
#   new handshakes per second          `wrk -t1 -c50 -H 'Connection: close'` (a full handshake each: wrk
#                                      does not resume sessions);
#   a 1 MB static file over TLS        `wrk -t1 -c50`.
# For each: requests/s and the server's CPU time per request (utime+stime of its processes over the run,
# from /proc: the machine is shared and noisy, this figure moves less). Plus the idle RSS of
# `csgi serve --demo` without TLS and with it (ps -o rss), and of nginx's worker.
# BENCH_QUICK=1: 3 s runs, one round (else 10 s runs, BENCH_REPS rounds, default 3).
set -uo pipefail
build=$(realpath "$1")
out=$(realpath "$2")
mkdir -p "$out"
PY=/usr/bin/python3
dur=10
reps=${BENCH_REPS:-3}
if [ "${BENCH_QUICK:-0}" = 1 ]; then dur=3; reps=1; fi
md="$out/tls.md"
csgi="$build/adapters/cli/csgi"

. "$(dirname "$0")/lib/common.sh"
cmake --build "$build" --target csgi_cli csgi_tls -j2 >/dev/null 2>&1 || true
[ -x "$csgi" ] || fail_section "csgi is not built (cmake --build BUILD --target csgi_cli csgi_tls)."
command -v wrk >/dev/null || fail_section "wrk not found (scripts/install-deps.sh bench)."
command -v nginx >/dev/null || fail_section "nginx not found."
command -v openssl >/dev/null || fail_section "openssl not found."
ulimit -n 65536 2>/dev/null || true

tmp=$(mktemp -d /tmp/csgi-bench-tls-XXXXXX)
chmod 755 "$tmp"
mkdir -p "$tmp/site" "$tmp/nginx"
printf 'Hello, world!' > "$tmp/site/hello"
head -c 1048576 /dev/urandom > "$tmp/site/big.bin"
chmod -R a+rX "$tmp"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 2 \
  -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >/dev/null 2>&1 ||
  fail_section "openssl could not make a certificate."
results="$tmp/results.tsv"
: > "$results"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

worker_rss_kb() {  # the largest single process of the tree (nginx's worker; csgi itself)
  local max=0 p r
  for p in $1 $(pgrep -P "$1"); do
    r=$(awk '/VmRSS/ {print $2}' /proc/"$p"/status 2>/dev/null || echo 0)
    [ "$r" -gt "$max" ] && max=$r
  done
  echo "$max"
}
ciphers="ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305"

# start_server NAME → sets $port and $spid
start_server() {
  port=$(free_port)
  case "$1" in
    csgi)
      taskset -c 0 "$csgi" serve --demo --static "$tmp/site" --listen "https://127.0.0.1:$port" \
        --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" --idle-timeout 120 --max-connections 20000 >/dev/null 2>&1 &
      spid=$!
      ;;
    nginx)
      cat > "$tmp/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
worker_rlimit_nofile 65536;
events { worker_connections 20000; }
http {
  access_log off;
  sendfile on;
  keepalive_requests 100000000;
  keepalive_timeout 120;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$port ssl;
    ssl_certificate $tmp/cert.pem;
    ssl_certificate_key $tmp/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ciphers $ciphers;
    ssl_prefer_server_ciphers off;
    ssl_session_cache shared:MozSSL:10m;
    location = /hello { default_type text/plain; return 200 "Hello, world!"; }
    location / { root $tmp/site; }
  }
}
EOF
      taskset -c 0 nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" -g 'daemon off;' 2>/dev/null &
      spid=$!
      ;;
  esac
  pids+=("$spid")
  wait_url "https://127.0.0.1:$port/hello" || echo "tls bench: $1 did not start" >&2
  sleep 0.3
}

stop_server() {
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
}

# run_wrk TEST SERVER PATH WRKARGS...
run_wrk() {
  local test=$1 server=$2 path=$3
  shift 3
  local url="https://127.0.0.1:$port$path" o c0 c1 rps reqs lat errs cpu
  c0=$(tree_cpu_ticks "$spid")
  o=$(taskset -c 1 wrk -t1 -c50 "$@" -d"${dur}s" "$url" 2>&1)
  c1=$(tree_cpu_ticks "$spid")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$o")
  reqs=$(awk '/requests in/ {print $1}' <<<"$o")
  lat=$(awk '/^    Latency/ {print $2}' <<<"$o")
  errs=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$o" | tr '\n' ' ')
  cpu=$("$PY" -c "import sys; t,r=float(sys.argv[1]),float(sys.argv[2] or 0); print('%.1f' % (t*1e6/$(getconf CLK_TCK)/r) if r else '?')" "$((c1 - c0))" "${reqs:-0}")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$test" "$server" "${rps:-0}" "$cpu" "${lat:-?}" "$errs" >> "$results"
  echo "  $server $test: ${rps:-0} req/s, ${cpu} µs server CPU/request (latency ${lat:-?}) $errs"
}

for round in $(seq "$reps"); do
  for server in csgi nginx; do
    start_server "$server"
    run_wrk "keep-alive hello" "$server" /hello
    run_wrk "handshakes (Connection: close)" "$server" /hello -H "Connection: close"
    run_wrk "1 MB file" "$server" /big.bin
    stop_server
  done
done

# Idle RSS: csgi without TLS (OpenSSL not loaded), csgi with TLS, nginx's worker with TLS.
rss_plain() {
  local p
  port=$(free_port)
  "$csgi" serve --demo --listen "127.0.0.1:$port" >/dev/null 2>&1 &
  p=$!
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/hello" && break; sleep 0.1; done
  sleep 0.5
  ps -o rss= -p "$p" | tr -d ' '
  kill "$p"
  wait "$p" 2>/dev/null
}
rss_tls() {
  local p
  port=$(free_port)
  "$csgi" serve --demo --listen "https://127.0.0.1:$port" --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" >/dev/null 2>&1 &
  p=$!
  for _ in $(seq 50); do curl -sk -o /dev/null "https://127.0.0.1:$port/hello" && break; sleep 0.1; done
  sleep 0.5
  ps -o rss= -p "$p" | tr -d ' '
  kill "$p"
  wait "$p" 2>/dev/null
}
rss_csgi_plain=$(rss_plain)
rss_csgi_tls=$(rss_tls)
start_server nginx
rss_nginx=$(worker_rss_kb "$spid")
stop_server

"$PY" - "$results" "$md" "$dur" "$reps" "$rss_csgi_plain" "$rss_csgi_tls" "$rss_nginx" <<'EOF'
import statistics, sys
results, md, dur, reps, rss_plain, rss_tls, rss_nginx = sys.argv[1:]
rows = [l.rstrip("\n").split("\t") for l in open(results) if l.strip()]
tests = []
for r in rows:
    if r[0] not in tests:
        tests.append(r[0])
def med(test, server, col):
    v = [float(r[col]) for r in rows if r[0] == test and r[1] == server and r[col] not in ("?", "")]
    return statistics.median(v) if v else 0.0
out = ["## tls", "",
       "HTTPS/1.1, csgi serve (1 io thread) vs nginx `ssl` (1 worker), the same RSA-2048 certificate, TLS 1.2/1.3, "
       "Mozilla intermediate ciphers; server on cpu0, `wrk -t1 -c50 -d%ss` on cpu1; median of %s round(s). "
       "CPU/request: utime+stime of the server's processes over the run." % (dur, reps), "",
       "| test | csgi req/s | nginx req/s | csgi / nginx | csgi CPU µs/req | nginx CPU µs/req |",
       "|---|---|---|---|---|---|"]
for t in tests:
    c, n = med(t, "csgi", 2), med(t, "nginx", 2)
    out.append("| %s | %.0f | %.0f | %.2f | %.1f | %.1f |" % (t, c, n, c / n if n else 0, med(t, "csgi", 3), med(t, "nginx", 3)))
out += ["", "Idle RSS: csgi serve --demo without TLS %s kB (OpenSSL not loaded), with TLS %s kB; nginx worker with "
        "TLS %s kB." % (rss_plain, rss_tls, rss_nginx), ""]
open(md, "w").write("\n".join(out))
print("\n".join(out))
EOF
