#!/usr/bin/env bash
# Bench suite "instructions": user-space instructions per request, counted by valgrind (callgrind), for
# csgi, nginx and h2o serving a hello and a 1 KB static file over HTTP/1.1, and a hello over HTTP/2 (h2c,
# 100 streams on one connection), one process (one thread) each; csgi and nginx also a hello over HTTPS
# (HTTP/1.1 keep-alive on TLS 1.3, a self-signed certificate). A count does
# not move with the machine's load as req/s does. Each server runs twice under callgrind, from start to
# exit, serving N1 and then N2 requests (`ab -k -c 8`; `h2load -c 1 -m 100` for HTTP/2); instructions per request = (Ir(N2) - Ir(N1)) /
# (N2 - N1), so start-up and shutdown cancel out. Kernel work (system calls, sendfile) is not counted:
# the servers make about the same calls per request, and CPU time per request in the other suites
# includes it.
# Called by scripts/bench.sh as `bash instructions.sh BUILD_DIR OUT_DIR`; writes OUT_DIR/instructions.md.
# BENCH_QUICK=1: fewer requests. INSTR_SERVERS="csgi", INSTR_CASES="tls:/hello": count only those servers
# and cases (e.g. to compare two builds of csgi).
set -euo pipefail
build=$(realpath "${1:-build}")
out=$(realpath "${2:-bench/out}")
mkdir -p "$out"
csgi="$build/adapters/cli/csgi"
[ -x "$csgi" ] || cmake --build "$build" --target csgi_cli -j"$(nproc)"
md="$out/instructions.md"
. "$(dirname "$0")/lib/common.sh"
for tool in valgrind ab h2load nginx h2o; do
  command -v "$tool" >/dev/null || { echo "instructions bench: $tool not found" >&2; exit 1; }
done
if [ "${BENCH_QUICK:-0}" = 1 ]; then n1=1000 n2=3000; else n1=2000 n2=10000; fi

tmp=$(mktemp -d)
spid=""
cleanup() {
  [ -n "$spid" ] && kill -9 "$spid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/site"
head -c 1024 /dev/zero | tr '\0' 'x' > "$tmp/site/1k.html"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 2 \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 >/dev/null 2>&1
printf 'Hello, world!' > "$tmp/site/hello.txt"


write_configs() {  # PORT [h2|tls]: nginx takes HTTP/2 with prior knowledge on PORT with h2, TLS with tls
  mkdir -p "$tmp/nginx" "$tmp/h2o"
  cat > "$tmp/nginx/nginx.conf" <<EOF
master_process off;
worker_processes 1;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  keepalive_requests 100000000;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  types { text/html html; }
  server {
    listen 127.0.0.1:$1$([ "$2" = h2 ] && echo " http2")$([ "$2" = tls ] && echo " ssl");
    ssl_certificate $tmp/cert.pem;
    ssl_certificate_key $tmp/key.pem;
    location = /hello { default_type text/plain; return 200 "Hello, world!"; }
    location / { root $tmp/site; }
  }
}
EOF
  cat > "$tmp/h2o/h2o.conf" <<EOF
listen:
  host: 127.0.0.1
  port: $1
num-threads: 1
user: $(id -un)
pid-file: $tmp/h2o/h2o.pid
error-log: $tmp/h2o/error.log
hosts:
  default:
    paths:
      /hello:
        mruby.handler: |
          Proc.new do |env|
            [200, {"content-type" => "text/plain"}, ["Hello, world!"]]
          end
      /:
        file.dir: $tmp/site
EOF
}

# server_cmd NAME PORT PATH [tls]: sets cmd to the command line of one server serving PATH on PORT (csgi: the
# demo app for /hello, the static app alone for files; nginx and h2o serve both from one config).
server_cmd() {
  local what=(--demo)
  [ "$3" = /hello ] || what=(--static "$tmp/site")
  case "$1" in
    csgi) if [ -n "${4:-}" ]; then
            cmd=("$csgi" serve "${what[@]}" --listen "https://127.0.0.1:$2" --threads 1 --idle-timeout 600
                 --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem")
          else
            cmd=("$csgi" serve "${what[@]}" --listen "127.0.0.1:$2" --threads 1 --idle-timeout 600)
          fi ;;
    nginx) cmd=(nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" -g 'daemon off;') ;;
    h2o) cmd=(h2o -c "$tmp/h2o/h2o.conf") ;;
  esac
}

# count NAME CASE REQUESTS: prints the instructions the server executed, start to exit. CASE is a path
# requested with ab over HTTP/1.1, h2:/hello (h2o: the 13-byte /hello.txt) with h2load over h2c, or
# tls:/hello with ab over HTTPS.
count() {
  local name=$1 path=$2 n=$3 port file h2="" tls="" scheme=http
  if [[ "$path" == h2:* ]]; then
    h2=1 path=${path#h2:}
    [ "$name" = h2o ] && path=/hello.txt
  elif [[ "$path" == tls:* ]]; then
    tls=1 path=${path#tls:} scheme=https
  fi
  port=$(free_port)
  write_configs "$port" "$([ -n "$h2" ] && echo h2)$([ -n "$tls" ] && echo tls)"
  file="$tmp/callgrind.$name.$n.out"
  local cmd
  server_cmd "$name" "$port" "$path" $tls
  valgrind --tool=callgrind --callgrind-out-file="$file" "${cmd[@]}" >"$tmp/$name.log" 2>&1 &
  spid=$!
  for _ in $(seq 300); do
    curl -sk -o /dev/null ${h2:+--http2-prior-knowledge} "$scheme://127.0.0.1:$port$path" && break
    sleep 0.1
  done
  local done
  if [ -n "$h2" ]; then
    done=$(h2load -n "$n" -c 1 -m 100 "http://127.0.0.1:$port$path" 2>/dev/null |
           awk '/^requests:/ {c=$8; f=$10} END {print c "/" f}')
  else
    done=$(ab -k -c 8 -n "$n" "$scheme://127.0.0.1:$port$path" 2>/dev/null | awk '/Complete requests/ {c=$3} /Failed requests/ {f=$3} END {print c "/" f}')
  fi
  [ "$done" = "$n/0" ] || echo "instructions bench: $name $path answered $done of $n" >&2
  kill -TERM "$spid" 2>/dev/null || true
  [ "$name" = nginx ] && kill -QUIT "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  spid=""
  # The warm-up curl adds one request to each run; it cancels out in the difference.
  awk '/^(summary|totals):/ {print $2; exit}' "$file"
}

results="$tmp/results.tsv"
: > "$results"
for path in ${INSTR_CASES:-/hello /1k.html h2:/hello tls:/hello}; do
  for name in ${INSTR_SERVERS:-csgi nginx h2o}; do
    [ "$path" = tls:/hello ] && [ "$name" = h2o ] && continue  # h2o's TLS row is in the tls suite
    a=$(count "$name" "$path" "$n1")
    b=$(count "$name" "$path" "$n2")
    printf '%s\t%s\t%s\t%s\n' "$path" "$name" "$a" "$b" >> "$results"
    echo "$path $name: $a instructions for $n1 requests, $b for $n2"
  done
done

"$PY" - "$results" "$out/instructions.md" "$n1" "$n2" <<'EOF'
import sys
src, dst, n1, n2 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
per = {}
for line in open(src):
    path, name, a, b = line.rstrip("\n").split("\t")
    try:
        per[(path, name)] = (int(b) - int(a)) / (n2 - n1)
    except ValueError:
        per[(path, name)] = None
fmt = lambda v: "failed" if v is None else f"{v:,.0f}"
ratio = lambda c, p: "" if c is None or not p else f"{c / p:.2f}"
lines = ["## instructions: user-space instructions per request (callgrind)", "",
         "Counted by valgrind's callgrind, which does not depend on the machine's load. Each server runs in one",
         f"process with one thread, twice from start to exit, serving {n1} and then {n2} keep-alive requests",
         "(`ab -k -c 8`); the figure is the difference divided by the difference in requests, so start-up and",
         "shutdown cancel out. Kernel instructions (system calls, sendfile) are not counted. Lower is better;",
         "the ratios are csgi / peer (below 1.00: csgi executes fewer instructions).", "",
         "| request | csgi | nginx | h2o | csgi / nginx | csgi / h2o |", "|---|---|---|---|---|---|"]
labels = {"/hello": "hello (13 bytes; csgi `--demo`, nginx `return 200`, h2o mruby handler)",
          "/1k.html": "static 1 KB file (csgi `--static`, nginx `root`, h2o `file.dir`)",
          "h2:/hello": "HTTP/2 hello, h2c, 100 streams on one connection (csgi `--demo`, nginx `listen http2` + "
                       "`return 200`, h2o `file.dir` with a 13-byte file)",
          "tls:/hello": "HTTPS keep-alive hello, TLS 1.3 (csgi `--demo` with `--tls-cert`, nginx `listen ssl` + "
                        "`return 200`; h2o: see the tls suite)"}
for path in ("/hello", "/1k.html", "h2:/hello", "tls:/hello"):
    c, g, h = (per.get((path, s)) for s in ("csgi", "nginx", "h2o"))
    hc = "–" if path == "tls:/hello" else fmt(h)
    lines.append(f"| {labels[path]} | {fmt(c)} | {fmt(g)} | {hc} | {ratio(c, g)} | {ratio(c, h)} |")
lines += ["", "Commands (PORT from a free-port probe; each under `valgrind --tool=callgrind`):", "",
          "- csgi: `csgi serve --demo --listen 127.0.0.1:PORT --threads 1` (hello), `csgi serve --static SITE "
          "--listen 127.0.0.1:PORT --threads 1` (file)",
          "- nginx: `nginx -c nginx.conf -g 'daemon off;'` with `master_process off; worker_processes 1;`",
          "- h2o: `h2o -c h2o.conf` with `num-threads: 1`",
          f"- client: `ab -k -c 8 -n {n1}` and `-n {n2}` (HTTPS: the same on https://); HTTP/2: "
          f"`h2load -c 1 -m 100 -n {n1}` and `-n {n2}` (bench/suites/instructions.sh)"]
open(dst, "w").write("\n".join(lines) + "\n")
EOF
cat "$out/instructions.md"
