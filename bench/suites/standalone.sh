#!/usr/bin/env bash
# Standalone adapter benchmark: usage `bash standalone.sh BUILD_DIR OUT_DIR`; writes
# OUT_DIR/standalone.md and bench/charts/standalone.png.
#
# csgi serve (--demo for hello, the Static app library examples/libstatic_site.so for files) side by side
# with nginx (`return 200` and static files, sendfile) and h2o (static files) from temporary configs on
# loopback, for 1 and 2 threads/workers each:
#   hello 13 B  `wrk -t1 -c50`  and  `wrk -t2 -c256`;  16-deep pipelining (`wrk -t1 -c50`, lua script);
#   a 1 KB html file and a 1.3 MB file (`wrk -t1 -c50`);  `ab -n 100000 -c 5000` (failed requests);
#   RSS idle and with 1000 open keep-alive connections.
# With 1 thread the server is pinned to cpu0 and wrk to cpu1 (taskset); with 2 nothing is pinned.
# csgi with 2 threads also runs with --reuseport (one SO_REUSEPORT socket per thread) for comparison.
# BENCH_QUICK=1: 3 s runs and ab -n 20000.
set -uo pipefail
build=$(realpath "$1")
out=$(realpath "$2")
here=$(cd "$(dirname "$0")/../.." && pwd)
charts="$here/bench/charts"
mkdir -p "$out" "$charts"
PY=/usr/bin/python3
dur=10
ab_n=100000
if [ "${BENCH_QUICK:-0}" = 1 ]; then dur=3; ab_n=20000; fi
md="$out/standalone.md"
csgi="$build/adapters/cli/csgi"
site_app="$build/examples/libstatic_site.so"

. "$(dirname "$0")/lib/common.sh"
# Always bring both up to date: an app library must match the core headers of the server that loads it.
cmake --build "$build" --target csgi_cli static_site -j2 >/dev/null 2>&1 || true
[ -x "$csgi" ] || fail_section "csgi is not built (cmake --build BUILD --target csgi_cli)."
[ -f "$site_app" ] || fail_section "examples/libstatic_site.so is not built (target static_site)."
command -v wrk >/dev/null || fail_section "wrk not found (scripts/install-deps.sh bench)."
ulimit -n 65536 2>/dev/null || ulimit -n 20000 2>/dev/null || true

tmp=$(mktemp -d /tmp/csgi-bench-standalone-XXXXXX)
chmod 755 "$tmp"
mkdir -p "$tmp/site"
printf 'Hello, world!' > "$tmp/site/hello"
"$PY" - "$tmp/site" <<'EOF'
import os, sys
d = sys.argv[1]
body = "<!doctype html><html><head><title>csgi bench</title></head><body>"
while len(body) < 1024 - len("</body></html>\n"):
    body += "<p>The quick brown fox jumps over the lazy dog.</p>"
body = body[:1024 - len("</body></html>\n")] + "</body></html>\n"
open(os.path.join(d, "index.html"), "w").write(body)
open(os.path.join(d, "big.bin"), "wb").write(bytes((i * 7 + 3) & 0xFF for i in range(1300000)))
EOF
chmod -R a+rX "$tmp"
printf 'init = function(args)\n  local r = {}\n  for i = 1, 16 do r[i] = wrk.format(nil, wrk.path) end\n  req = table.concat(r)\nend\nrequest = function() return req end\n' > "$tmp/pipeline16.lua"
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

wait_port() {
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$1/hello" && return 0
    sleep 0.1
  done
  return 1
}
tree_rss_kb() {  # RSS of a process and its children, in kB
  local total=0 p
  for p in $1 $(pgrep -P "$1"); do
    total=$((total + $(awk '/VmRSS/ {print $2}' /proc/"$p"/status 2>/dev/null || echo 0)))
  done
  echo "$total"
}
worker_rss_kb() {  # the largest single process of the tree (the idle worker for nginx/h2o/csgi)
  local max=0 p r
  for p in $1 $(pgrep -P "$1"); do
    r=$(awk '/VmRSS/ {print $2}' /proc/"$p"/status 2>/dev/null || echo 0)
    [ "$r" -gt "$max" ] && max=$r
  done
  echo "$max"
}

# start_server NAME THREADS [reuseport] → sets $port and $spid
start_server() {
  local name=$1 n=$2 extra=${3:-}
  port=$(free_port)
  local pincmd=()
  [ "$n" = 1 ] && command -v taskset >/dev/null && pincmd=(taskset -c 0)
  case "$name" in
    csgi)
      # hello from --demo (/hello); files from the Static app library on a second port.
      local args=(serve --demo --listen "127.0.0.1:$port" --threads "$n" --idle-timeout 120 --max-connections 20000)
      [ -n "$extra" ] && args+=(--reuseport)
      "${pincmd[@]}" "$csgi" "${args[@]}" >/dev/null 2>&1 &
      spid=$!
      fport=$(free_port)
      local fargs=(serve --app "$site_app" --app-arg "$tmp/site" --listen "127.0.0.1:$fport" --threads "$n" --max-connections 20000)
      "${pincmd[@]}" "$csgi" "${fargs[@]}" >/dev/null 2>&1 &
      fpid=$!
      pids+=("$spid" "$fpid")
      ;;
    nginx)
      mkdir -p "$tmp/nginx"
      cat > "$tmp/nginx/nginx.conf" <<EOF
worker_processes $n;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
worker_rlimit_nofile 65536;
events { worker_connections 20000; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000000;
  keepalive_timeout 120;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  default_type application/octet-stream;
  types { text/html html; }
  server {
    listen 127.0.0.1:$port;
    location = /hello { default_type text/plain; return 200 "Hello, world!"; }
    location / { root $tmp/site; }
  }
}
EOF
      "${pincmd[@]}" nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" -g 'daemon off;' 2>/dev/null &
      spid=$!
      fport=$port
      fpid=""
      pids+=("$spid")
      ;;
    h2o)
      mkdir -p "$tmp/h2o"
      cat > "$tmp/h2o/h2o.conf" <<EOF
listen:
  host: 127.0.0.1
  port: $port
num-threads: $n
max-connections: 20000
user: $(id -un)
pid-file: $tmp/h2o/h2o.pid
error-log: $tmp/h2o/error.log
hosts:
  default:
    paths:
      /:
        file.dir: $tmp/site
EOF
      "${pincmd[@]}" h2o -c "$tmp/h2o/h2o.conf" >/dev/null 2>&1 &
      spid=$!
      fport=$port
      fpid=""
      pids+=("$spid")
      ;;
  esac
  wait_port "$port" || echo "standalone bench: $name did not start" >&2
  if [ "$fport" != "$port" ]; then
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$fport/index.html" && break; sleep 0.1; done
  fi
  sleep 0.3
}

# run_wrk LABEL THREADS SERVER URL WRKARGS...
run_wrk() {
  local test=$1 n=$2 server=$3 url=$4
  shift 4
  local o
  local pinw=()
  [ "$n" = 1 ] && command -v taskset >/dev/null && pinw=(taskset -c 1)
  o=$("${pinw[@]}" wrk "$@" -d"${dur}s" "$url" 2>&1)
  local rps lat errs
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$o")
  lat=$(awk '/^    Latency/ {print $2}' <<<"$o")
  errs=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$o" | tr '\n' ' ')
  printf 'wrk\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$test" "$n" "$server" "${rps:-0}" "${lat:-?}" "wrk $* -d${dur}s $url" "$errs" >> "$results"
  echo "  $server t=$n $test: ${rps:-0} req/s (latency ${lat:-?}) $errs"
}

keepalive_rss() {  # opens 1000 keep-alive connections (one request each), prints the tree RSS in kB, closes
  "$PY" - "$1" "$2" "$spid" <<'EOF'
import os, socket, sys
port, path, pid = int(sys.argv[1]), sys.argv[2], sys.argv[3]
conns = []
for i in range(1000):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
    conns.append(s)
for s in conns:
    s.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(4096)
def rss(p):
    try:
        return int(next(l.split()[1] for l in open("/proc/%s/status" % p) if l.startswith("VmRSS")))
    except (OSError, StopIteration):
        return 0
kids = os.popen("pgrep -P %s" % pid).read().split()
print(sum(rss(p) for p in [pid] + kids))
EOF
}

# All servers of one thread count run at once (idle ones cost nothing); each test then runs against
# them one after another, so slow drifts in the machine's load hit every server alike.
declare -A P_PORT P_FPORT P_PID P_FPID P_IDLE P_IDLEW
for n in 1 2; do
  variants="csgi nginx h2o"
  [ "$n" = 2 ] && variants="csgi csgi-reuseport nginx h2o"
  for v in $variants; do
    extra=""
    [ "$v" = csgi-reuseport ] && extra=reuseport
    start_server "${v%%-*}" "$n" $extra
    P_PORT[$v]=$port; P_FPORT[$v]=$fport; P_PID[$v]=$spid; P_FPID[$v]=${fpid:-}
    P_IDLE[$v]=$(tree_rss_kb "$spid"); P_IDLEW[$v]=$(worker_rss_kb "$spid")
  done
  echo "== $n thread(s): $variants"
  for v in $variants; do run_wrk "hello -t1 -c50" "$n" "$v" "http://127.0.0.1:${P_PORT[$v]}/hello" -t1 -c50; done
  for v in $variants; do run_wrk "hello -t2 -c256" "$n" "$v" "http://127.0.0.1:${P_PORT[$v]}/hello" -t2 -c256; done
  for v in $variants; do run_wrk "pipelined x16 -t1 -c50" "$n" "$v" "http://127.0.0.1:${P_PORT[$v]}/hello" -t1 -c50 -s "$tmp/pipeline16.lua"; done
  for v in $variants; do
    [ "$v" = csgi-reuseport ] && continue
    run_wrk "static 1 KB -t1 -c50" "$n" "$v" "http://127.0.0.1:${P_FPORT[$v]}/index.html" -t1 -c50
  done
  for v in $variants; do
    [ "$v" = csgi-reuseport ] && continue
    run_wrk "file 1.3 MB -t1 -c50" "$n" "$v" "http://127.0.0.1:${P_FPORT[$v]}/big.bin" -t1 -c50
  done
  for v in $variants; do
    [ "$v" = csgi-reuseport ] && continue
    spid=${P_PID[$v]}
    ka_kb=$(keepalive_rss "${P_PORT[$v]}" /hello)
    printf 'rss\t%s\t%s\t%s\t%s\t%s\n' "$n" "$v" "${P_IDLE[$v]}" "${P_IDLEW[$v]}" "$ka_kb" >> "$results"
    echo "  $v RSS idle ${P_IDLE[$v]} kB (largest process ${P_IDLEW[$v]} kB), 1000 keep-alive ${ka_kb} kB"
    abo=$(ab -n "$ab_n" -c 5000 -r -q "http://127.0.0.1:${P_PORT[$v]}/hello" 2>&1)
    failed=$(awk '/Failed requests/ {print $3}' <<<"$abo")
    complete=$(awk '/Complete requests/ {print $3}' <<<"$abo")
    abrps=$(awk '/Requests per second/ {print $4}' <<<"$abo")
    printf 'ab\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$v" "${complete:-0}" "${failed:-?}" "${abrps:-0}" "ab -n $ab_n -c 5000 -r -q" >> "$results"
    echo "  $v ab -c5000: complete ${complete:-0} failed ${failed:-?} (${abrps:-0} req/s)"
  done
  for v in $variants; do
    kill "${P_PID[$v]}" ${P_FPID[$v]:+"${P_FPID[$v]}"} 2>/dev/null
    wait "${P_PID[$v]}" ${P_FPID[$v]:+"${P_FPID[$v]}"} 2>/dev/null
  done
done

"$PY" - "$results" "$md" "$charts/standalone.png" "$dur" <<'EOF'
import sys, collections
res, md, png, dur = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
wrk, ab, rss = [], [], []
for line in open(res):
    f = line.rstrip("\n").split("\t")
    if f[0] == "wrk":
        wrk.append(f[1:])
    elif f[0] == "ab":
        ab.append(f[1:])
    elif f[0] == "rss":
        rss.append(f[1:])
rate = {(t, n, s): float(r or 0) for t, n, s, r, *_ in wrk}
lat = {(t, n, s): l for t, n, s, r, l, *_ in wrk}
tests = list(dict.fromkeys(t for t, *_ in wrk))
def fmt(v):
    return "%.0f" % v if v else "—"
def ratio(a, b):
    return "%.2f×" % (a / b) if a and b else "—"
o = ["## standalone", "",
     "The standalone adapter (`csgi serve`) against nginx and h2o, same thread/worker count, wrk on the same",
     "machine over loopback, %s s per run, one run each; for each test the servers run one after another (other" % dur,
     "engineers were compiling on this 2-core box during the run: figures are noisy). 1 thread: server pinned to",
     "cpu0, wrk to cpu1. csgi: hello from `--demo` (`/hello`, 13 bytes), files from `examples/libstatic_site.so`",
     "(the Static app: FileBody → sendfile). nginx: `return 200` for hello, `root` for files. h2o: `file.dir`",
     "for both (a 13-byte file for hello).", "",
     "| test | threads | csgi req/s | nginx req/s | h2o req/s | csgi/nginx | csgi/h2o | csgi latency (avg) |",
     "|---|---|---|---|---|---|---|---|"]
for n in ("1", "2"):
    for t in tests:
        c, g, h = rate.get((t, n, "csgi"), 0), rate.get((t, n, "nginx"), 0), rate.get((t, n, "h2o"), 0)
        o.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (t, n, fmt(c), fmt(g), fmt(h), ratio(c, g), ratio(c, h), lat.get((t, n, "csgi"), "—")))
rp = [(t, rate.get((t, "2", "csgi"), 0), rate.get((t, "2", "csgi-reuseport"), 0)) for t in tests if (t, "2", "csgi-reuseport") in rate]
if rp:
    o += ["", "csgi with 2 threads: one shared listening socket (default) vs one SO_REUSEPORT socket per thread:", "",
          "| test | shared acceptor req/s | SO_REUSEPORT req/s |", "|---|---|---|"]
    o += ["| %s | %s | %s |" % (t, fmt(a), fmt(b)) for t, a, b in rp]
o += ["", "`ab -c 5000` (no keep-alive; ab is single-threaded and measures itself more than the server, so the",
      "point is the failed-request count):", "",
      "| server | threads | complete | failed | req/s |", "|---|---|---|---|---|"]
o += ["| %s | %s | %s | %s | %s |" % (s, n, c, f, r) for n, s, c, f, r, _ in ab]
o += ["", "Resident memory (kB; the whole process tree, and its largest single process):", "",
      "| server | threads | RSS idle | largest process idle | RSS with 1000 keep-alive connections |", "|---|---|---|---|---|"]
o += ["| %s | %s | %s | %s | %s |" % (s, n, i, w, k) for n, s, i, w, k in rss]
o += ["", "Commands (PORT from a free-port probe):", "", "```"]
seen = set()
for t, n, s, r, l, cmd, *rest in wrk:
    key = (t, cmd.split(" http")[0])
    if key in seen:
        continue
    seen.add(key)
    o.append(cmd.replace("127.0.0.1:", "127.0.0.1:").split(" http")[0] + " http://127.0.0.1:PORT/...")
o += [ab[0][-1] + " http://127.0.0.1:PORT/hello" if ab else "", "```", "", "![standalone req/s](charts/standalone.png)", ""]
open(md, "w").write("\n".join(o))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    servers = ["csgi", "nginx", "h2o"]
    for ax, n in zip(axes, ("1", "2")):
        width = 0.26
        for i, s in enumerate(servers):
            vals = [rate.get((t, n, s), 0) for t in tests]
            ax.bar([x + (i - 1) * width for x in range(len(tests))], vals, width, label=s)
        ax.set_yscale("log")
        ax.set_xticks(range(len(tests)))
        ax.set_xticklabels([t if t.startswith("hello") else t.split(" -t")[0] for t in tests], rotation=20, ha="right", fontsize=8)
        ax.set_title("%s thread%s / worker%s" % (n, "" if n == "1" else "s", "" if n == "1" else "s"))
        ax.set_ylabel("requests/s (log)")
        ax.legend(fontsize=8)
    fig.suptitle("csgi standalone vs nginx vs h2o (wrk, loopback)")
    fig.tight_layout()
    fig.savefig(png, dpi=90)
except Exception as e:
    print("chart not written: %s" % e)
print("wrote %s" % md)
EOF
