#!/usr/bin/env bash
# App executor benchmark: usage `bash app_threads.sh BUILD_DIR OUT_DIR`; writes OUT_DIR/app_threads.md and
# bench/charts/app_threads.png.
#
# A mixed workload: /db blocks 20 ms (a database call), /fast answers at once. Two wrk processes run at
# the same time against one server: `wrk -t1 -c32 --latency` on /db and `wrk -t1 -c4 --latency` on /fast.
# Servers, one process each, started here from temporary settings on loopback and stopped after:
#   csgi serve --app bench/peers/libcsgi_bench_mixed.so --threads 4 with --app-threads 0 (the app on the
#     io threads) and --app-threads 64 (a pool);
#   the same app in Python (time.sleep(0.02)) under gunicorn gthread (1 worker, 64 threads), uWSGI
#     (1 process, 64 threads, HTTP/1.1 keep-alive socket) and csgi serve --wsgi --threads 4 with
#     --app-threads 0 and 64.
# Plus hello keep-alive, `wrk -t1 -c50`: csgi --demo (1 io thread, the app inline; and with
# --app-threads 64) vs nginx `return 200` (1 worker), all pinned to cpu0, wrk to cpu1, rounds alternated.
# Targets: /db near 32 / 20 ms = 1600 req/s and /fast p99 under 5 ms with --app-threads 64; hello inline
# ≥ 1.0 × nginx.
# BENCH_QUICK=1: 3 s runs, one hello round (else 10 s runs, BENCH_REPS hello rounds, default 3).
set -uo pipefail
build=$(realpath "$1")
out=$(realpath "$2")
root=$(cd "$(dirname "$0")/../.." && pwd)
charts="$root/bench/charts"
mkdir -p "$out" "$charts"
PY=/usr/bin/python3
dur=10
reps=${BENCH_REPS:-3}
if [ "${BENCH_QUICK:-0}" = 1 ]; then dur=3; reps=1; fi
md="$out/app_threads.md"
csgi="$build/adapters/cli/csgi"
app="$build/bench/peers/libcsgi_bench_mixed.so"

. "$(dirname "$0")/lib/common.sh"
# Always bring them up to date: an app library must match the core headers of the server that loads it.
cmake --build "$build" --target csgi_cli csgi_bench_mixed csgi_python csgi_python_host -j2 >/dev/null 2>&1 || true
[ -x "$csgi" ] || fail_section "csgi is not built (cmake --build BUILD --target csgi_cli)."
[ -f "$app" ] || fail_section "bench/peers/libcsgi_bench_mixed.so is not built (target csgi_bench_mixed)."
command -v wrk >/dev/null || fail_section "wrk not found (scripts/install-deps.sh bench)."
csgi_help=$("$csgi" --help 2>&1)  # not piped into grep -q: pipefail + SIGPIPE
[[ "$csgi_help" == *--app-threads* ]] || fail_section "this csgi has no --app-threads option."
has_wsgi=0
[[ "$csgi_help" == *--wsgi* ]] && [ -d "$build/bindings/python/csgi" ] && has_wsgi=1
ulimit -n 65536 2>/dev/null || ulimit -n 20000 2>/dev/null || true

work=$(mktemp -d /tmp/csgi-bench-app-threads-XXXXXX)
chmod 755 "$work"
cat > "$work/mixedapp.py" <<'PYEOF'
import time


def application(environ, start_response):
    path = environ.get("PATH_INFO", "")
    if path == "/db":
        time.sleep(0.02)
        status, body = "200 OK", b"db\n"
    elif path == "/fast":
        status, body = "200 OK", b"fast\n"
    else:
        status, body = "404 Not Found", b"not found\n"
    start_response(status, [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
PYEOF
results="$work/results.tsv"
: > "$results"
pids=()
cleanup() {
  for p in "${pids[@]}"; do stop_pid "$p"; done
  rm -rf "$work"
}
trap cleanup EXIT

# start PORT PATH cmd... → $spid (its own process group, so that stop reaches gunicorn's/uWSGI's workers)
start() {
  local port=$1 path=$2
  shift 2
  (cd "$work" && exec setsid "$@" >>"$work/server.log" 2>&1) &
  spid=$!
  pids+=("$spid")
  wait_url "http://127.0.0.1:$port$path"
}
# wrk_fields FILE → "req/s p50 p99 errors" from a `wrk --latency` output
wrk_fields() {
  awk '/Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2}
       /Non-2xx/ {err=err "non-2xx " $NF " "} /Socket errors/ {err=err $0 " "}
       END {gsub(/  +/, " ", err); gsub(/[ ,]+/, "_", err); print (rps ? rps : 0), (p50 ? p50 : "-"), (p99 ? p99 : "-"), (err ? err : "none")}' "$1"
}

# mixed KEY LABEL cmd... (cmd may use PORT): one server, /db and /fast loaded at the same time
mixed() {
  local key=$1 label=$2
  shift 2
  local port
  port=$(free_port)
  local argv=("${@//PORT/$port}")
  if ! start "$port" /fast "${argv[@]}"; then
    echo "  $label: did not start (log: $(tail -n 3 "$work/server.log" | tr '\n' ' '))" >&2
    printf '%s\t%s\t0\t-\t-\t0\t-\t-\tdid_not_start\t%s\n' "$key" "$label" "$*" >> "$results"
    stop_pid "$spid"
    return
  fi
  curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$port/db"  # warm: imports, first dlopen'd paths
  timeout $((dur + 30)) wrk -t1 -c32 -d"${dur}s" --latency "http://127.0.0.1:$port/db" > "$work/db.out" 2>&1 &
  local wdb=$!
  timeout $((dur + 30)) wrk -t1 -c4 -d"${dur}s" --latency "http://127.0.0.1:$port/fast" > "$work/fast.out" 2>&1 &
  local wfast=$!
  wait "$wdb" "$wfast"
  stop_pid "$spid"
  local drps dp50 dp99 derr frps fp50 fp99 ferr
  read -r drps dp50 dp99 derr <<<"$(wrk_fields "$work/db.out")"
  read -r frps fp50 fp99 ferr <<<"$(wrk_fields "$work/fast.out")"
  local errs="db:$derr fast:$ferr"
  [ "$derr" = none ] && [ "$ferr" = none ] && errs=none
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$key" "$label" "$drps" "$dp50" "$dp99" "$frps" "$fp50" "$fp99" \
    "$errs" "$*" >> "$results"
  echo "  $label: /db $drps req/s (p99 $dp99), /fast $frps req/s p50 $fp50 p99 $fp99, errors: $errs"
}

echo "app_threads bench (${dur}s runs)"
C=("$csgi" serve --listen 127.0.0.1:PORT --threads 4 --max-connections 20000)
G=("$PY" -m gunicorn --bind 127.0.0.1:PORT --workers 1 --worker-class gthread --threads 64 --log-level warning)
U=(uwsgi --plugin python3 --http11-socket 127.0.0.1:PORT --processes 1 --threads 64
   --disable-logging --die-on-term)
mixed csgi_app_0 "csgi --app, --app-threads 0" "${C[@]}" --app "$app" --app-threads 0
mixed csgi_app_64 "csgi --app, --app-threads 64" "${C[@]}" --app "$app" --app-threads 64
mixed gunicorn "gunicorn gthread, 64 threads" "${G[@]}" mixedapp:application
mixed uwsgi "uWSGI, 64 threads" "${U[@]}" --wsgi-file mixedapp.py
if [ "$has_wsgi" = 1 ]; then
  mixed csgi_wsgi_0 "csgi --wsgi, --app-threads 0" "${C[@]}" --wsgi mixedapp:application --app-threads 0
  mixed csgi_wsgi_64 "csgi --wsgi, --app-threads 64" "${C[@]}" --wsgi mixedapp:application --app-threads 64
fi

# Hello keep-alive: every server up at once, pinned to cpu0; rounds alternate between them.
pin_s=(); pin_w=()
command -v taskset >/dev/null && { pin_s=(taskset -c 0); pin_w=(taskset -c 1); }
mkdir -p "$work/nginx"
declare -A HPORT
HPORT[nginx]=$(free_port)
cat > "$work/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
worker_rlimit_nofile 65536;
events { worker_connections 20000; }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  server {
    listen 127.0.0.1:${HPORT[nginx]};
    location = /hello { default_type text/plain; return 200 "Hello, world!"; }
  }
}
EOF
start "${HPORT[nginx]}" /hello "${pin_s[@]}" nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" -g 'daemon off;' ||
  echo "  nginx did not start" >&2
declare -A HCMD
for v in inline pool; do
  HPORT[$v]=$(free_port)
  threads=0; [ "$v" = pool ] && threads=64
  HCMD[$v]="csgi serve --demo --listen 127.0.0.1:PORT --threads 1 --app-threads $threads --idle-timeout 120"
  start "${HPORT[$v]}" /hello "${pin_s[@]}" "$csgi" serve --demo --listen "127.0.0.1:${HPORT[$v]}" --threads 1 \
    --app-threads "$threads" --idle-timeout 120 --max-connections 20000 || echo "  csgi ($v) did not start" >&2
done
HCMD[nginx]="nginx -c nginx.conf -g 'daemon off;' (worker_processes 1; location = /hello { return 200 \"Hello, world!\"; })"
for r in $(seq "$reps"); do
  for v in inline nginx pool; do
    timeout $((dur + 30)) "${pin_w[@]}" wrk -t1 -c50 -d"${dur}s" --latency "http://127.0.0.1:${HPORT[$v]}/hello" > "$work/hello.out" 2>&1
    read -r rps p50 p99 err <<<"$(wrk_fields "$work/hello.out")"
    printf 'hello\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$r" "$rps" "$p50" "$p99" "$err" "${HCMD[$v]}" >> "$results"
    echo "  hello round $r $v: $rps req/s (p99 $p99), errors: $err"
  done
done
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
rev=$(git -C "${src:-$root}" log -1 --format='%h (%s)' 2>/dev/null)

"$PY" - "$results" "$md" "$charts/app_threads.png" "$dur" "$reps" "$rev" <<'EOF'
import re, sys, time
res, md, png, dur, reps, rev = sys.argv[1:7]
mixed, hello = [], {}
for line in open(res):
    f = line.rstrip("\n").split("\t")
    if f[0] == "hello":
        hello.setdefault(f[1], []).append(f[2:])
    else:
        mixed.append(f)
def ms(v):  # wrk's "812.00us" / "20.31ms" / "1.02s" → ms
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", v or "")
    if not m:
        return None
    return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[m.group(2)]
def num(v):
    try:
        return float(v)
    except ValueError:
        return 0.0
o = ["## app_threads: blocking apps on the app executor (`--app-threads`)", "",
     "A mixed workload on one server process: `/db` blocks 20 ms (a database call), `/fast` answers at once;",
     "`wrk -t1 -c32 --latency` on /db and `wrk -t1 -c4 --latency` on /fast run at the same time, %s s." % dur,
     "csgi runs the C++ app library bench/peers/csgi_mixed.cpp (`--app`) and the same app in Python",
     "(`time.sleep(0.02)`, `--wsgi`), with 4 io threads; gunicorn and uWSGI run the Python app with 64 threads.",
     "Targets with `--app-threads 64`: /db near 32 / 20 ms = 1600 req/s, /fast p99 under 5 ms.",
     "Everything shares a 2-core machine (wrk included, other builds running): figures are noisy.",
     "csgi build: %s; run %s." % (rev or "unknown", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())), "",
     "| server | /db req/s | /db p99 | /fast req/s | /fast p50 | /fast p99 | errors |",
     "|---|---|---|---|---|---|---|"]
for key, label, drps, dp50, dp99, frps, fp50, fp99, errs, cmd in mixed:
    o.append("| %s | %.0f | %s | %.0f | %s | %s | %s |" % (label, num(drps), dp99, num(frps), fp50, fp99,
                                                        errs.replace("_", " ")))
def median_row(v):
    rows = hello.get(v, [])
    if not rows:
        return 0.0, "-", "-", "-"
    each = " / ".join("%.0f" % num(r[1]) for r in rows)
    rows = sorted(rows, key=lambda r: num(r[1]))
    r = rows[(len(rows) - 1) // 2]
    return num(r[1]), r[2], r[3], each
hi, hn, hp = median_row("inline"), median_row("nginx"), median_row("pool")
ratio = lambda a, b: "%.2f" % (a / b) if a and b else "—"
o += ["", "Hello keep-alive (`wrk -t1 -c50 -d%ss --latency`, server pinned to cpu0 and wrk to cpu1, median of %s"
      % (dur, reps), "alternated rounds; target: csgi inline ≥ 1.0 × nginx):", "",
      "| server | req/s | p50 | p99 | csgi / nginx | each round, req/s |", "|---|---|---|---|---|---|",
      "| csgi --demo, 1 io thread, --app-threads 0 | %.0f | %s | %s | %s | %s |" % (hi[0], hi[1], hi[2], ratio(hi[0], hn[0]), hi[3]),
      "| nginx, 1 worker, `return 200` | %.0f | %s | %s | 1.00 | %s |" % (hn[0], hn[1], hn[2], hn[3]),
      "| csgi --demo, 1 io thread, --app-threads 64 | %.0f | %s | %s | %s | %s |" % (hp[0], hp[1], hp[2], ratio(hp[0], hn[0]), hp[3]),
      "", "![app executor](charts/app_threads.png)", "", "Commands (PORT from a free-port probe; the Python module",
      "`mixedapp.py` is written by bench/suites/app_threads.sh):", ""]
for key, label, *_, cmd in mixed:
    cmd = re.sub(r"\S*/bench/peers/", "BUILD/bench/peers/", re.sub(r"\S*/adapters/cli/csgi", "csgi", cmd))
    o.append("- %s: `%s`" % (label, cmd))
o.append("- wrk: `wrk -t1 -c32 -d%ss --latency http://127.0.0.1:PORT/db` and, at the same time, "
         "`wrk -t1 -c4 -d%ss --latency http://127.0.0.1:PORT/fast`" % (dur, dur))
for v in ("inline", "nginx", "pool"):
    if hello.get(v):
        o.append("- hello: `taskset -c 0 %s`" % hello[v][0][-1])
o.append("- hello wrk: `taskset -c 1 wrk -t1 -c50 -d%ss --latency http://127.0.0.1:PORT/hello`" % dur)
o.append("")
open(md, "w").write("\n".join(o))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [m[1].replace(", ", "\n") for m in mixed]
    colors = ["#c63" if m[0].startswith("csgi") else "#68a" for m in mixed]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
    axes[0].bar(labels, [num(m[2]) for m in mixed], color=colors)
    axes[0].axhline(1600, color="#555", linestyle="--", linewidth=1, label="32 / 20 ms = 1600")
    axes[0].set_ylabel("/db requests/s (-c32)")
    axes[0].legend(fontsize=8)
    axes[1].bar(labels, [ms(m[7]) or 0 for m in mixed], color=colors)
    axes[1].axhline(5, color="#555", linestyle="--", linewidth=1, label="5 ms")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("/fast p99 latency, ms (log; -c4)")
    axes[1].legend(fontsize=8)
    for ax in axes:
        ax.tick_params(axis="x", labelsize=7)
    fig.suptitle("/db blocks 20 ms, /fast answers at once, loaded together (wrk, loopback)")
    fig.tight_layout()
    fig.savefig(png, dpi=90)
except Exception as e:
    print("chart not written: %s" % e, file=sys.stderr)
print("wrote %s" % md)
EOF
