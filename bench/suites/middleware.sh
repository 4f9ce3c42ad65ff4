#!/usr/bin/env bash
# Bench suite "middleware": what a typical middleware stack costs on the standalone adapter, and the
# static app against nginx serving the same files.
#   1. hello (14 B) bare vs through access_log (to a file) + runtime + conditional_get + content_length +
#      static_prefix fallthrough — ratio, target >= 0.90;
#   2. a 4 KiB text body bare, through the same stack, and through the stack + deflate (gzip requested):
#      the cost of deflate on its own;
#   3. static files of 1 KiB, 16 KiB, 100 KB, 1.3 MB and 4 MB: csgi's Static app vs nginx (1 worker,
#      sendfile) — target >= 0.9x at 1 KiB and 1.3 MB. At 4 MB the body no longer fits in what loopback
#      buffers at once: the server finishes it on writable events.
# The apps are built here as one app library (--app-arg picks the variant), served by `csgi serve`
# with one io thread pinned to cpu0; wrk -t1 -c50 runs pinned to cpu1. Each figure is the median of
# several runs (alternating servers). Called by scripts/bench.sh as `bash middleware.sh BUILD_DIR OUT_DIR`;
# writes OUT_DIR/middleware.md and bench/charts/middleware.png. BENCH_QUICK=1: shorter runs.
set -euo pipefail
build=$(realpath "${1:-build}")
out=$(realpath "${2:-bench/out}")
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out" "$root/bench/charts"
md="$out/middleware.md"
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d /tmp/csgi-bench-mw-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

if [ "${BENCH_QUICK:-0}" = 1 ]; then dur=3; reps=1; else dur=8; reps=3; fi
for tool in wrk nginx taskset curl; do
  command -v "$tool" >/dev/null || { echo "middleware bench: $tool not installed" >&2; exit 1; }
done

cmake --build "$build" --target csgi_cli csgi_middleware -j"$(nproc)" >/dev/null
csgi="$build/adapters/cli/csgi"

# ---- the app library: every variant in one .so ------------------------------------------------------
cat > "$work/mwbench_app.cpp" <<'CPP'
#include "csgi/core/app_library.hpp"
#include "csgi/middleware/access_log.hpp"
#include "csgi/middleware/conditional_get.hpp"
#include "csgi/middleware/content_length.hpp"
#include "csgi/middleware/deflate.hpp"
#include "csgi/middleware/static.hpp"
#include "csgi/middleware/static_prefix.hpp"
#if __has_include("csgi/middleware/runtime.hpp")
#include "csgi/middleware/runtime.hpp"
#define HAVE_RUNTIME 1
#endif
using namespace csgi;
using namespace csgi::mw;
// args: VARIANT (bare|stack|deflate|static) BODY (hello|4k) LOGFILE DIR
static App make(const AppArgs& a) {
  const std::string& variant = a.at(0);
  StaticOptions files;
  files.root = a.at(3);
  if (variant == "static") return Static(files);
  std::string text = "Hello, world!\n";
  if (a.at(1) == "4k") {
    text.clear();
    for (int i = 0; text.size() < 4096; ++i) text += "line " + std::to_string(i) + ": the quick brown fox jumps\n";
    text.resize(4096);
  }
  auto body = std::make_shared<const std::string>(text);
  // The app sets Content-Length itself, so bare and stacked responses leave the adapter the same way
  // (without it the adapter's own path for unknown-length bodies would be measured too).
  std::string length = std::to_string(body->size());
  App app = [body, length](Env&) {
    Response r;
    r.headers.add("Content-Type", "text/plain; charset=utf-8");
    r.headers.add("Content-Length", length);
    r.body = body;
    return r;
  };
  if (variant == "bare") return app;
  StaticPrefixOptions sp;
  sp.prefixes = {"/static/"};
  sp.files = files;
  sp.pass_through = true;
  app = wrap<StaticPrefix>(app, sp);
  if (variant == "deflate") app = wrap<Deflate>(app);
  app = wrap<ContentLength>(app);
  app = wrap<ConditionalGet>(app);
#ifdef HAVE_RUNTIME
  app = wrap<Runtime>(app);
#endif
  AccessLogOptions log;
  log.format = "combined";
  log.path = a.at(2);
  return wrap<AccessLog>(app, log);
}
CSGI_APP(make)
CPP
g++ -std=c++20 -O2 -shared -fPIC -I"$build/include" "$work/mwbench_app.cpp" -o "$work/libmwbench.so" \
  "$build/middleware/libcsgi_middleware.a" "$build/core/libcsgi_core.a" -lz -lcrypt -lcrypto -pthread
runtime_used=$([ -f "$root/middleware/runtime.hpp" ] && echo yes || echo no)

mkdir -p "$work/www"
/usr/bin/python3 -c '
import base64, os, sys
for name, size in (("1k.txt", 1024), ("16k.txt", 16384), ("100k.txt", 100000), ("1300k.txt", 1300000),
                   ("4m.txt", 4000000)):
    open(os.path.join(sys.argv[1], name), "wb").write(base64.encodebytes(os.urandom(size))[:size])' "$work/www"
chmod -R a+rX "$work"  # nginx workers run as nobody

wait_port() { wait_url "http://127.0.0.1:$1/" 100; }
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# start_csgi VARIANT BODY -> sets port, pid
start_csgi() {
  port=$(free_port)
  : > "$work/access.log"
  taskset -c 0 "$csgi" serve --app "$work/libmwbench.so" --app-arg "$1" --app-arg "$2" --app-arg "$work/access.log" \
    --app-arg "$work/www" --listen "127.0.0.1:$port" --threads 1 --error-log "$work/csgi-errors.log" &
  pid=$!
  pids+=("$pid")
  wait_port "$port"
}
start_nginx() {
  port=$(free_port)
  mkdir -p "$work/nginx"
  cat > "$work/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 4096; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path $work/nginx; proxy_temp_path $work/nginx; fastcgi_temp_path $work/nginx;
  uwsgi_temp_path $work/nginx; scgi_temp_path $work/nginx;
  server { listen 127.0.0.1:$port; root $work/www; }
}
EOF
  taskset -c 0 nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" 2>/dev/null &
  pid=$!
  pids+=("$pid")
  wait_port "$port"
}

# measure URL [wrk header...] -> prints "req/s avg_latency_ms p99_ms"
measure() {
  local url=$1; shift
  local hdr=()
  for h in "$@"; do hdr+=(-H "$h"); done
  taskset -c 1 wrk -t1 -c50 -d"${dur}s" --latency "${hdr[@]}" "$url" > "$work/wrk.txt"
  /usr/bin/python3 - "$work/wrk.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
def ms(v, u): return float(v) * {"us": 0.001, "ms": 1, "s": 1000}[u]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
lat = re.search(r"Latency\s+([\d.]+)(us|ms|s)", t)
p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", t)
err = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
if err: print("non-2xx responses: " + err.group(1), file=sys.stderr); sys.exit(1)
total = int(re.search(r"(\d+) requests in", t).group(1))
print(f"{rps:.0f} {ms(*lat.groups()):.3f} {ms(*p99.groups()):.3f} {total}")
PY
}

declare -A results  # name -> "rps lat p99 requests cpu_us" lines, one per rep
run_case() {  # NAME START_FN ARGS... -- URL [headers]
  local name=$1; shift
  local starter=$1; shift
  local sargs=()
  while [ "$1" != "--" ]; do sargs+=("$1"); shift; done
  shift
  "$starter" "${sargs[@]}"
  local r c0 c1
  c0=$(tree_cpu_ticks "$pid")
  r=$(measure "http://127.0.0.1:$port$1" "${@:2}")
  c1=$(tree_cpu_ticks "$pid")
  # server CPU per request (user+system of the server and its children, e.g. nginx's worker), in µs:
  # robust against the machine's load, unlike req/s.
  r="$r $(awk -v d=$((c1 - c0)) -v t="$(getconf CLK_TCK)" -v n="${r##* }" 'BEGIN { printf "%.2f", d * 1e6 / t / n }')"
  results[$name]+="$r"$'\n'
  stop "$pid"
  if [ "$name" = hello_stack ]; then  # every request logged? (the writer flushes when the app goes)
    log_lines=$(wc -l < "$work/access.log")
    log_requests=$(echo "$r" | cut -d' ' -f4)
  fi
}

# sanity: the variants answer as expected
start_csgi deflate 4k
ce=$(curl -s -D - -o /dev/null -H 'Accept-Encoding: gzip' "http://127.0.0.1:$port/" | tr -d '\r' | awk -F': ' 'tolower($1)=="content-encoding"{print $2}')
[ "$ce" = gzip ] || { echo "deflate variant did not compress" >&2; exit 1; }
stop "$pid"
start_csgi static hello
[ "$(curl -s "http://127.0.0.1:$port/1300k.txt" | wc -c)" = 1300000 ] || { echo "static variant is wrong" >&2; exit 1; }
stop "$pid"

load_start=$(cut -d" " -f1 /proc/loadavg)
for rep in $(seq "$reps"); do
  run_case hello_bare start_csgi bare hello -- /
  run_case hello_stack start_csgi stack hello -- /
  run_case k4_bare start_csgi bare 4k -- / 'Accept-Encoding: gzip'
  run_case k4_stack start_csgi stack 4k -- / 'Accept-Encoding: gzip'
  run_case k4_deflate start_csgi deflate 4k -- / 'Accept-Encoding: gzip'
  run_case static1k_csgi start_csgi static hello -- /1k.txt
  run_case static1k_nginx start_nginx -- /1k.txt
  run_case static1300k_csgi start_csgi static hello -- /1300k.txt
  run_case static1300k_nginx start_nginx -- /1300k.txt
  run_case static16k_csgi start_csgi static hello -- /16k.txt
  run_case static16k_nginx start_nginx -- /16k.txt
  run_case static100k_csgi start_csgi static hello -- /100k.txt
  run_case static100k_nginx start_nginx -- /100k.txt
  run_case static4m_csgi start_csgi static hello -- /4m.txt
  run_case static4m_nginx start_nginx -- /4m.txt
done

declare -A med
for k in "${!results[@]}"; do
  med[$k]=$(printf '%s' "${results[$k]}" | /usr/bin/python3 -c '
import sys, statistics
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
print(" ".join(f"{statistics.median(c):.3f}" for c in zip(*rows)))')
done

MW_LOAD_START=$load_start /usr/bin/python3 - "$out/middleware.md" "$root/bench/charts/middleware.png" "$dur" "$reps" "$runtime_used" "$log_lines/$log_requests" \
  "${med[hello_bare]}" "${med[hello_stack]}" "${med[k4_bare]}" "${med[k4_stack]}" "${med[k4_deflate]}" \
  "${med[static1k_csgi]}" "${med[static1k_nginx]}" "${med[static1300k_csgi]}" "${med[static1300k_nginx]}" \
  "${med[static16k_csgi]}" "${med[static16k_nginx]}" "${med[static100k_csgi]}" "${med[static100k_nginx]}" \
  "${med[static4m_csgi]}" "${med[static4m_nginx]}" <<'PY'
import sys
import os
dst, chart, dur, reps, runtime_used, log_lines = sys.argv[1:7]
load_start = os.environ.get("MW_LOAD_START", "?")
vals = [list(map(float, v.split())) for v in sys.argv[7:]]
hb, hs, kb, ks, kd, s1c, s1n, s13c, s13n, s16c, s16n, s100c, s100n, s4mc, s4mn = vals
def row(label, v, base=None, target=""):
    ratio = f"{v[0] / base[0]:.2f}" if base else ""
    cpu_ratio = f"{base[4] / v[4]:.2f}" if base and v[4] > 0 else ""
    return f"| {label} | {v[0]:,.0f} | {v[1]:.2f} | {v[2]:.2f} | {v[4]:.1f} | {ratio} | {cpu_ratio} | {target} |"
L = ["## middleware: stack cost on the standalone adapter, static files vs nginx", ""]
L.append(f"`csgi serve` with 1 io thread pinned to cpu0, `wrk -t1 -c50 -d{dur}s --latency` pinned to cpu1, "
         f"loopback, keep-alive; medians of {reps} run(s) per row, servers alternating. "
         f"Load average at the start of the run {load_start}, at its end {open('/proc/loadavg').read().split()[0]} "
         "(wrk and the server take both cores; more means other work shared them): ratios within one run are "
         "what to compare.")
L.append("")
L.append("Stack = access_log (combined, to a file, background writer) + "
         + ("runtime + " if runtime_used == "yes" else "")
         + "conditional_get + content_length + static_prefix (`/static/`, falls through), around the app; "
         "+ deflate (gzip, level 6) where named.")
L.append("")
L.append("| case | req/s | avg latency ms | p99 ms | server CPU µs/req | ratio req/s | ratio by CPU/req | target |")
L.append("|---|---|---|---|---|---|---|---|")
L.append(row("hello 14 B, bare app", hb))
L.append(row("hello 14 B, through the stack", hs, hb, "≥ 0.90 × bare"))
L.append(row("4 KiB text, bare app", kb))
L.append(row("4 KiB text, through the stack", ks, kb))
L.append(row("4 KiB text, stack + deflate (gzip sent)", kd, kb, "reported"))
L.append(row("static 1 KiB file, nginx 1 worker", s1n))
L.append(row("static 1 KiB file, csgi Static", s1c, s1n, "≥ 0.9 × nginx"))
L.append(row("static 16 KiB file, nginx 1 worker", s16n))
L.append(row("static 16 KiB file, csgi Static", s16c, s16n))
L.append(row("static 100 KB file, nginx 1 worker", s100n))
L.append(row("static 100 KB file, csgi Static", s100c, s100n))
L.append(row("static 1.3 MB file, nginx 1 worker", s13n))
L.append(row("static 1.3 MB file, csgi Static", s13c, s13n, "≥ 0.9 × nginx"))
L.append(row("static 4 MB file, nginx 1 worker", s4mn))
L.append(row("static 4 MB file, csgi Static", s4mc, s4mn))
L.append("")
L.append("Static files are sent by sendfile(2) on both servers (csgi: the head with MSG_MORE, then the file; "
         "nginx: TCP_CORK on, writev of the head, sendfile, TCP_CORK off). A 4 MB body does not fit in what a "
         "loopback connection takes at once: both servers finish it on writable events, keeping the connection.")
L.append("")
L.append("*ratio by CPU/req* = the base's server CPU time per request / this row's (user+system time of "
         "the server process and its children over the run, divided by the requests wrk completed): the "
         "throughput ratio the server would reach on an otherwise idle core. On this loaded machine it is the "
         "figure to read; req/s swings with whatever else runs.")
L.append("")
L.append(f"Deflate (gzip level 6) on the 4 KiB body costs {kd[4] - ks[4]:.1f} µs of server CPU per request over "
         f"the same stack without it ({ks[4]:.1f} → {kd[4]:.1f} µs). Access log of the last hello-stack run: "
         f"{log_lines.split('/')[0]} lines for {log_lines.split('/')[1]} requests wrk completed (wrk stops "
         "with requests in flight, so a few more lines than completed requests is normal; fewer would mean "
         "dropped lines).")
L.append("")
L.append("![middleware stack and static files](charts/middleware.png)")
L.append("")
L.append("Commands: `bash bench/suites/middleware.sh BUILD OUT` runs "
         "`taskset -c 0 csgi serve --app libmwbench.so --app-arg VARIANT --app-arg BODY --app-arg LOG --app-arg DIR "
         "--listen 127.0.0.1:PORT --threads 1` and "
         f"`taskset -c 1 wrk -t1 -c50 -d{dur}s --latency [-H 'Accept-Encoding: gzip'] URL`; "
         "nginx: `taskset -c 0 nginx -c TMP/nginx.conf` (worker_processes 1, sendfile on, access_log off).")
open(dst, "w").write("\n".join(L) + "\n")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    names = ["hello\nbare", "hello\nstack", "4K\nbare", "4K\nstack", "4K stack\n+deflate"]
    ax[0].bar(names, [hb[4], hs[4], kb[4], ks[4], kd[4]], color=["#888", "#37c", "#888", "#37c", "#c73"])
    ax[0].set_ylabel("server CPU µs / request"); ax[0].set_title("middleware stack cost (csgi serve, 1 thread)")
    x = [0, 1, 2, 3, 4]
    ax[1].bar([i - 0.2 for i in x], [s1n[0], s16n[0], s100n[0], s13n[0], s4mn[0]], 0.4, label="nginx", color="#888")
    ax[1].bar([i + 0.2 for i in x], [s1c[0], s16c[0], s100c[0], s13c[0], s4mc[0]], 0.4, label="csgi Static", color="#37c")
    ax[1].set_xticks(x, ["1 KiB", "16 KiB", "100 KB", "1.3 MB", "4 MB"]); ax[1].set_yscale("log"); ax[1].legend()
    ax[1].set_title("static files (req/s, log scale)")
    fig.tight_layout(); fig.savefig(chart, dpi=90)
except Exception as e:
    print(f"no chart: {e}", file=sys.stderr)
PY
cat "$out/middleware.md"
