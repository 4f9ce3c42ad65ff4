#!/usr/bin/env bash
# HTTP/2 benchmark: usage `bash h2.sh BUILD_DIR OUT_DIR`; writes OUT_DIR/h2.md.
#
# HTTP/2 hello over cleartext with prior knowledge (h2c) and over TLS (h2 by ALPN), h2load from
# nghttp2-client, one connection with 1 and with 100 concurrent streams (`h2load -c1 -m1` and `-c1 -m100`).
# Servers, one process and one worker each, started here from temporary settings on loopback and stopped
# after, pinned to cpu0 (h2load to cpu1), rounds alternated:
#   csgi serve --demo --threads 1 (the app inline on the io thread; /hello answers "Hello, world!");
#   nginx (master_process off, worker_processes 1, `listen PORT http2`, `return 200 "Hello, world!"`);
#   h2o (num-threads 1, a 13-byte hello.txt served by file.dir; h2o takes h2c with prior knowledge);
#   over TLS, each again on an https listener (`--listen https://…`; nginx `listen PORT ssl http2` in the
#   same process; h2o `ssl:`) with one RSA-2048 certificate made here, TLS 1.2 and 1.3.
# Reported: req/s (median of the rounds), and the server's CPU time per request (utime+stime of its
# process over the run / requests): on a shared, noisy machine the second says more than the first.
# Target: ≥ 1.0 × nginx and ≥ 1.0 × h2o.
# BENCH_QUICK=1: 100k/200k requests per run, one round (else 300k/1M, BENCH_REPS rounds, default 3).
set -uo pipefail
build=$(realpath "$1")
out=$(realpath "$2")
mkdir -p "$out"
PY=/usr/bin/python3
reps=${BENCH_REPS:-3}
n1=300000
n100=1000000
if [ "${BENCH_QUICK:-0}" = 1 ]; then reps=1; n1=100000; n100=200000; fi
md="$out/h2.md"
csgi="$build/adapters/cli/csgi"

. "$(dirname "$0")/lib/common.sh"
cmake --build "$build" --target csgi_cli -j2 >/dev/null 2>&1 || true
[ -x "$csgi" ] || fail_section "csgi is not built (cmake --build BUILD --target csgi_cli)."
command -v h2load >/dev/null || fail_section "h2load not found (Debian nghttp2-client)."
ulimit -n 65536 2>/dev/null || true

work=$(mktemp -d /tmp/csgi-bench-h2-XXXXXX)
chmod 755 "$work"
results="$work/results.tsv"
: > "$results"
pids=()
cleanup() {
  for p in "${pids[@]}"; do stop_pid "$p"; done
  rm -rf "$work"
}
trap cleanup EXIT
pin_s=()
pin_w=()
command -v taskset >/dev/null && { pin_s=(taskset -c 0); pin_w=(taskset -c 1); }
declare -A PORT PID CMD
declare -A URL
# speaks_h2 URL: true when /hello answers over HTTP/2 there (h2c with prior knowledge, or h2 by ALPN).
speaks_h2() {
  local how=--http2-prior-knowledge
  case $1 in https:*) how="--http2 -k" ;; esac
  [ "$(curl -s $how -o /dev/null -w '%{http_version}' --max-time 1 "$1")" = 2 ]
}
start() {  # start NAME PORT COMMAND...: the server's pid in PID[NAME] once /hello answers over HTTP/2
  local name=$1 port=$2
  shift 2
  local url="http://127.0.0.1:$port/hello"
  case $name in *-tls) url="https://127.0.0.1:$port/hello" ;; esac
  "$@" > "$work/$name.log" 2>&1 &
  local p=$!
  pids+=("$p")
  for _ in $(seq 100); do
    if speaks_h2 "$url"; then
      PORT[$name]=$port
      URL[$name]=$url
      PID[$name]=$p
      return 0
    fi
    sleep 0.1
  done
  echo "  $name did not start (see $work/$name.log)" >&2
  return 1
}

port=$(free_port)
CMD[csgi]="csgi serve --demo --threads 1 (TLS: --listen https://… --tls-cert … --tls-key …)"
start csgi "$port" "${pin_s[@]}" "$csgi" serve --demo --listen "127.0.0.1:$port" --threads 1 --idle-timeout 120
tls=0
if command -v openssl >/dev/null &&
   openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 2 \
     -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 >/dev/null 2>&1; then
  tls=1
  port=$(free_port)
  start csgi-tls "$port" "${pin_s[@]}" "$csgi" serve --demo --listen "https://127.0.0.1:$port" --threads 1 \
    --idle-timeout 120 --tls-cert "$work/cert.pem" --tls-key "$work/key.pem"
fi

if command -v nginx >/dev/null; then
  mkdir -p "$work/nginx"
  port=$(free_port)
  cat > "$work/nginx/nginx.conf" <<EOF
master_process off;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 100000000;
  http2_max_requests 100000000;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  server {
    listen 127.0.0.1:$port http2;
    location = /hello { default_type text/plain; return 200 "Hello, world!"; }
  }
EOF
  tls_port=$(free_port)
  [ "$tls" = 1 ] && cat >> "$work/nginx/nginx.conf" <<EOF
  server {
    listen 127.0.0.1:$tls_port ssl http2;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    location = /hello { default_type text/plain; return 200 "Hello, world!"; }
  }
EOF
  echo "}" >> "$work/nginx/nginx.conf"
  CMD[nginx]="nginx (master_process off; worker_processes 1; listen PORT http2, and listen PORT ssl http2; return 200 \"Hello, world!\")"
  start nginx "$port" "${pin_s[@]}" nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" -g 'daemon off;'
  # One process serves both listeners: its TLS rounds are measured on the same pid.
  if [ "$tls" = 1 ] && [ -n "${PID[nginx]:-}" ] && speaks_h2 "https://127.0.0.1:$tls_port/hello"; then
    PID[nginx-tls]=${PID[nginx]}
    PORT[nginx-tls]=$tls_port
    URL[nginx-tls]="https://127.0.0.1:$tls_port/hello"
  fi
fi

if command -v h2o >/dev/null; then
  mkdir -p "$work/h2o/www"
  printf 'Hello, world!' > "$work/h2o/www/hello"
  port=$(free_port)
  cat > "$work/h2o/h2o.conf" <<EOF
num-threads: 1
listen:
  host: 127.0.0.1
  port: $port
http2-idle-timeout: 120
file.mime.addtypes:
  text/plain: .txt
hosts:
  default:
    paths:
      /:
        file.dir: $work/h2o/www
EOF
  CMD[h2o]="h2o (num-threads: 1; file.dir with a 13-byte /hello; TLS: listen.ssl with the certificate)"
  start h2o "$port" "${pin_s[@]}" h2o -c "$work/h2o/h2o.conf"
  if [ "$tls" = 1 ]; then
    port=$(free_port)
    awk -v port="$port" -v dir="$work" '/^  port:/ { print "  port: " port; print "  ssl:";
      print "    certificate-file: " dir "/cert.pem"; print "    key-file: " dir "/key.pem"; next } { print }' \
      "$work/h2o/h2o.conf" > "$work/h2o/h2o-tls.conf"
    start h2o-tls "$port" "${pin_s[@]}" h2o -c "$work/h2o/h2o-tls.conf"
  fi
fi

servers=()
for s in csgi nginx h2o csgi-tls nginx-tls h2o-tls; do [ -n "${PID[$s]:-}" ] && servers+=("$s"); done
[ -n "${PID[csgi]:-}" ] || fail_section "csgi did not start."
hz=$(getconf CLK_TCK)
for r in $(seq "$reps"); do
  for m in 1 100; do
    n=$n1
    [ "$m" = 100 ] && n=$n100
    for s in "${servers[@]}"; do
      t0=$(cpu_ticks "${PID[$s]}")
      timeout 300 "${pin_w[@]}" h2load -c1 -m"$m" -n"$n" "${URL[$s]}" > "$work/h2load.out" 2>&1
      t1=$(cpu_ticks "${PID[$s]}")
      rps=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' "$work/h2load.out")
      ok=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' "$work/h2load.out")
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$m" "$r" "${rps:-0}" "${ok:-0}" "$((t1 - t0))" >> "$results"
      echo "  round $r -m$m $s: ${rps:-?} req/s, ${ok:-?} succeeded, $((t1 - t0)) ticks"
    done
  done
done

"$PY" - "$results" "$md" "$hz" "${CMD[csgi]}" "${CMD[nginx]:-}" "${CMD[h2o]:-}" <<'EOF'
import statistics, sys
res, md, hz = sys.argv[1], sys.argv[2], int(sys.argv[3])
cmds = dict(zip(["csgi", "nginx", "h2o"], sys.argv[4:7]))
rows = {}
for line in open(res):
    s, m, r, rps, ok, ticks = line.rstrip("\n").split("\t")
    rows.setdefault((s, int(m)), []).append((float(rps), int(ok), int(ticks)))
out = ["## h2: HTTP/2 hello over h2c and over TLS (h2load, one connection)", "",
       "| transport | streams per connection | server | req/s (median) | × nginx | × h2o | server CPU µs/request | CPU × nginx |",
       "|---|---|---|---|---|---|---|---|"]
for sfx, transport in (("", "h2c"), ("-tls", "h2 over TLS")):
    for m in (1, 100):
        med = {s: statistics.median(x[0] for x in v) for (s, mm), v in rows.items() if mm == m}
        cpu = {s: sum(t for _, _, t in v) / hz / max(1, sum(ok for _, ok, _ in v)) * 1e6
               for (s, mm), v in rows.items() if mm == m}
        for base in ("csgi", "nginx", "h2o"):
            s = base + sfx
            if (s, m) not in rows:
                continue
            ng, ho = "nginx" + sfx, "h2o" + sfx
            rn = "%.2f" % (med[s] / med[ng]) if med.get(ng) else "-"
            rh = "%.2f" % (med[s] / med[ho]) if med.get(ho) else "-"
            cn = "%.2f" % (cpu[s] / cpu[ng]) if cpu.get(ng) else "-"
            out.append("| %s | %d | %s | %.0f | %s | %s | %.1f | %s |" % (transport, m, base, med[s], rn, rh, cpu[s], cn))
out += ["", "Servers: " + "; ".join("%s: `%s`" % (k, v) for k, v in cmds.items() if v) + ".",
        "Client: `h2load -c1 -m1|100 -n N http(s)://127.0.0.1:PORT/hello` (over https h2load negotiates h2 by "
        "ALPN), server on cpu0, h2load on cpu1. CPU time "
        "is utime+stime of the server process over the run (1/%d s ticks) divided by the requests." % hz, ""]
open(md, "w").write("\n".join(out))
print("\n".join(out))
EOF
