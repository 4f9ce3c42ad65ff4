#!/usr/bin/env bash
# The Python apps people run, per core: `bash python_apps.sh BUILD_DIR OUT_DIR` writes OUT_DIR/python_apps.md.
#   Flask      csgi serve --wsgi  vs  uWSGI http-socket
#   Django     csgi serve --wsgi  vs  gunicorn sync and gunicorn gthread (tests/bindings/django_project.py:
#              startproject's apps and middleware, one view module through its URLconf)
#   Starlette  csgi serve --asgi  vs  uvicorn (uvloop, httptools)
#   C++ hello through the bindings (csgi.load_app) vs a Python hello, both under gunicorn sync
# Each app answers a hello, a streamed response (16 chunks of 64 bytes) and a 100 KB POST it reads whole.
# Every server is confined to one CPU (PYAPPS_SERVER_CPU, default 0) with taskset, all of a group's servers
# to the same one, and wrk -t1 to another (PYAPPS_LOAD_CPU, default 1); the servers of a group take turns run
# for run. Reported per request, from /proc over each server's wrk runs: CPU µs (utime+stime of the server
# and its child processes) and context switches (voluntary + involuntary, every thread of those processes);
# req/s beside them moves with whatever else the machine runs. PYAPPS_GROUPS (default "hello flask django
# starlette") picks the groups to run. PYAPPS_SYSCALLS=1 also counts the servers' system calls per request,
# all of them and the reads (read, readv, recvfrom, recvmsg), with `perf stat` on their syscall tracepoints
# (root, or perf_event_paranoid -1); off by default, as the tracepoints add a little to the CPU counted.
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath "${2:-bench/out}")
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
md="$out/python_apps.md"
. "$(dirname "$0")/lib/common.sh"
dur=${PYAPPS_DURATION:-2}; [ "${BENCH_QUICK:-0}" = 1 ] && dur=1
reps=${BENCH_REPS:-3}
conns=${PYAPPS_CONNECTIONS:-32}
scpu=${PYAPPS_SERVER_CPU:-0}
lcpu=${PYAPPS_LOAD_CPU:-1}
groups=" ${PYAPPS_GROUPS:-hello flask django starlette} "
sys_events=raw_syscalls:sys_enter,syscalls:sys_enter_read,syscalls:sys_enter_readv,syscalls:sys_enter_recvfrom,syscalls:sys_enter_recvmsg
count_sys=0
if [ "${PYAPPS_SYSCALLS:-0}" = 1 ]; then
  if perf stat -x, -e "$sys_events" -- true >/dev/null 2>&1; then count_sys=1
  else echo "python_apps: PYAPPS_SYSCALLS=1 but perf cannot count syscall tracepoints here: not counted" >&2; fi
fi
lib="$build/tests/bindings/libcsgi_pytest_apps.so"
csgi_bin="$build/adapters/cli/csgi"
[ -e "$lib" ] && [ -d "$build/bindings/python/csgi" ] && [ -x "$csgi_bin" ] ||
  fail_section "Not measured: build csgi_python, csgi_pytest_apps and csgi_cli first."
command -v wrk >/dev/null || fail_section "Not measured: wrk is not installed."
export PYTHONPATH="$build/bindings/python:$root/tests/bindings" CSGI_TEST_APPS="$lib" PYTHONDONTWRITEBYTECODE=1
work=$(mktemp -d)
declare -A PID PORT CMD
trap 'for k in "${!PID[@]}"; do stop_pid "${PID[$k]}"; done; rm -rf "$work"' EXIT

cat > "$work/pyhello.py" <<'PYEOF'
def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", "13")])
    return [b"Hello, World!"]
PYEOF
cat > "$work/cxxhello.py" <<'PYEOF'
import os, csgi
application = csgi.load_app(os.environ["CSGI_TEST_APPS"], ["hello"])
PYEOF
cat > "$work/flaskapp.py" <<'PYEOF'
import hashlib
from flask import Flask, Response, request
application = Flask(__name__)
@application.route("/")
def index():
    return "Hello, World!"
@application.route("/stream")
def stream():
    return Response((b"%04d %s\n" % (i, b"x" * 58) for i in range(16)), mimetype="text/plain")
@application.route("/upload", methods=["POST"])
def upload():
    body = request.get_data()
    return "%d %s" % (len(body), hashlib.sha256(body).hexdigest())
PYEOF
cat > "$work/stapp.py" <<'PYEOF'
import hashlib
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, StreamingResponse
from starlette.routing import Route
async def index(request):
    return PlainTextResponse("Hello, World!")
async def chunks():
    for i in range(16):
        yield b"%04d %s\n" % (i, b"x" * 58)
async def stream(request):
    return StreamingResponse(chunks(), media_type="text/plain")
async def upload(request):
    body = await request.body()
    return PlainTextResponse("%d %s" % (len(body), hashlib.sha256(body).hexdigest()))
app = Starlette(routes=[Route("/", index), Route("/stream", stream), Route("/upload", upload, methods=["POST"])])
PYEOF
"$PY" -c 'import sys; sys.stdout.write("wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/octet-stream\"\nwrk.body = string.rep(\"x\", 102400)\n")' > "$work/post100k.lua"

# The workloads: name → wrk arguments after the URL's path.
declare -A WPATH=([hello]=/ [stream]=/stream [upload]=/upload)
declare -A WARGS=([hello]="" [stream]="" [upload]="-s $work/post100k.lua")

# serve KEY cmd... (PORT replaced): starts a server on the server CPU in a session of its own.
serve() {
  local key=$1; shift
  local port; port=$(free_port)
  local argv=("${@//PORT/$port}")
  (cd "$work" && exec setsid taskset -c "$scpu" "${argv[@]}" >"$work/$key.log" 2>&1) &
  PID[$key]=$!; PORT[$key]=$port
  local shown="${*//$build/BUILD}"
  CMD[$key]="taskset -c $scpu ${shown//$root/ROOT}"
  if ! wait_url "http://127.0.0.1:$port/"; then
    echo "python_apps: $key did not start: $(tail -3 "$work/$key.log")" >&2
    stop_pid "${PID[$key]}"; unset "PID[$key]"
  fi
}
# The server's processes: the one started and its children (a master's workers).
tree() { echo "$1"; pgrep -P "$1" || true; }
# cpu_and_switches PID: "ticks switches" summed over the server's processes and their threads.
cpu_and_switches() {
  local p t ticks=0 sw=0
  for p in $(tree "$1"); do
    ticks=$((ticks + $(cpu_ticks "$p")))
    for t in /proc/"$p"/task/*/status; do
      sw=$((sw + $(awk '/^(non)?voluntary_ctxt_switches/ {s += $2} END {print s + 0}' "$t" 2>/dev/null || echo 0)))
    done
  done
  echo "$ticks $sw"
}
# measure WORKLOADS -- KEY...: $reps rounds; in each, every workload on every server in turn, the first
# server of the turn rotating round by round. One line per wrk run into runs.tsv: key workload requests
# ticks switches non-2xx syscalls reads (the last two -1 when not counted). Then stops the servers.
measure() {
  local workloads=() key w round i t0 s0 t1 s1 res perf_pid calls
  while [ "$1" != -- ]; do workloads+=("$1"); shift; done; shift
  local keys=("$@")
  for round in $(seq "$reps"); do
    for w in "${workloads[@]}"; do
      for i in "${!keys[@]}"; do
        key=${keys[$(( (i + round) % ${#keys[@]} ))]}
        [ -n "${PID[$key]:-}" ] || continue
        read -r t0 s0 <<<"$(cpu_and_switches "${PID[$key]}")"
        perf_pid=""
        if [ "$count_sys" = 1 ]; then
          taskset -c "$lcpu" perf stat -x, -e "$sys_events" -p "$(tree "${PID[$key]}" | paste -sd,)" \
            -o "$work/perf.txt" >/dev/null 2>&1 &
          perf_pid=$!
        fi
        # shellcheck disable=SC2086
        res=$(taskset -c "$lcpu" wrk -t1 -c"$conns" -d"${dur}s" ${WARGS[$w]} "http://127.0.0.1:${PORT[$key]}${WPATH[$w]}" 2>&1 |
              awk '/requests in/ {n=$1} /Non-2xx/ {bad=$NF} END {print n + 0, bad + 0}')
        read -r t1 s1 <<<"$(cpu_and_switches "${PID[$key]}")"
        calls="-1 -1"
        if [ -n "$perf_pid" ]; then
          kill -INT "$perf_pid" 2>/dev/null; wait "$perf_pid" 2>/dev/null
          calls=$(awk -F, '$3 == "raw_syscalls:sys_enter" {a += $1} $3 ~ /^syscalls:/ {r += $1} END {print a + 0, r + 0}' "$work/perf.txt")
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$key" "$w" "${res% *}" $((t1 - t0)) $((s1 - s0)) "${res#* }" \
          ${calls% *} ${calls#* } >> "$work/runs.tsv"
      done
    done
  done
  for key in "$@"; do
    [ -n "${PID[$key]:-}" ] && stop_pid "${PID[$key]}"
    unset "PID[$key]"
  done
}

G=("$PY" -m gunicorn --bind 127.0.0.1:PORT --workers 1 --log-level warning)
U=(uwsgi --plugin python3 --http-socket 127.0.0.1:PORT --processes 1 --disable-logging --die-on-term)
UV=("$PY" -m uvicorn --host 127.0.0.1 --port PORT --loop uvloop --http httptools --log-level warning --no-access-log)
C=("$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1)
: > "$work/runs.tsv"
echo "python_apps bench (${dur}s runs, $reps rounds; servers on cpu $scpu, wrk -c$conns on cpu $lcpu)"

if [[ "$groups" == *" hello "* ]]; then
  serve gun_cxx "${G[@]}" --worker-class sync cxxhello:application
  serve gun_py "${G[@]}" --worker-class sync pyhello:application
  measure hello -- gun_cxx gun_py
fi

if [[ "$groups" == *" flask "* ]]; then
  serve csgi_flask "${C[@]}" --wsgi flaskapp:application
  serve uwsgi_flask "${U[@]}" --wsgi-file flaskapp.py
  measure hello stream upload -- csgi_flask uwsgi_flask
fi

if [[ "$groups" == *" django "* ]]; then
  serve csgi_django "${C[@]}" --wsgi django_project:application
  serve gun_django "${G[@]}" --worker-class sync django_project:application
  serve gth_django "${G[@]}" --worker-class gthread --threads 4 django_project:application
  measure hello stream upload -- csgi_django gun_django gth_django
fi

if [[ "$groups" == *" starlette "* ]]; then
  serve csgi_st "${C[@]}" --asgi stapp:app
  serve uv_st "${UV[@]}" stapp:app
  measure hello stream upload -- csgi_st uv_st
fi

"$PY" - "$work/runs.tsv" "$dur" "$reps" "$conns" "$scpu" "$lcpu" > "$md" <<'PYEOF'
import os, statistics, sys
path, dur, reps, conns, scpu, lcpu = sys.argv[1:7]
dur = float(dur)
tck = os.sysconf("SC_CLK_TCK")
runs = {}
for line in open(path):
    key, w, n, ticks, sw, bad, calls, reads = line.split("\t")
    runs.setdefault((key, w), []).append((int(n), int(ticks), int(sw), int(bad), int(calls), int(reads)))

def stats(key, w):
    r = runs.get((key, w))
    if not r:
        return None
    n = sum(x[0] for x in r)
    return {"rps": statistics.median(x[0] / dur for x in r), "n": n,
            "cpu": sum(x[1] for x in r) * 1e6 / tck / n if n else float("nan"),
            "sw": sum(x[2] for x in r) / n if n else float("nan"), "bad": sum(x[3] for x in r),
            "sys": "%.1f / %.1f" % (sum(x[4] for x in r) / n, sum(x[5] for x in r) / n)
                   if n and all(x[4] >= 0 for x in r) else "-"}

rows = [  # app, key, server, peer key (None: the peer itself)
    ("Flask", "csgi_flask", "csgi serve --wsgi", "uwsgi_flask"),
    ("Flask", "uwsgi_flask", "uWSGI http-socket", None),
    ("Django", "csgi_django", "csgi serve --wsgi", "gun_django"),
    ("Django", "gun_django", "gunicorn sync", None),
    ("Django", "gth_django", "gunicorn gthread, 4 threads", "gun_django"),
    ("Starlette", "csgi_st", "csgi serve --asgi", "uv_st"),
    ("Starlette", "uv_st", "uvicorn (uvloop, httptools)", None),
]
print("## python_apps\n")
print("The Python apps people run, each against its usual server, per core: every server confined to cpu %s"
      " (taskset), wrk -t1 -c%s on cpu %s; %s rounds of %g s runs, the servers of a group taking turns run for run."
      " CPU µs and context switches per request are summed over the server's processes and threads across its"
      " runs (/proc); req/s is the median run and moves with the machine's other load. A ratio is the peer's"
      " CPU per request over this server's (above 1: this server spends less).\n" % (scpu, conns, lcpu, reps, dur))
print("uWSGI's http-socket and gunicorn's sync worker close the connection after each response; csgi, uvicorn"
      " and gunicorn gthread keep it alive. Workloads: GET / (a hello), GET /stream (16 chunks of 64 bytes),"
      " POST /upload (100 KB, read whole, its SHA-256 answered).\n")
print("Syscalls/req (PYAPPS_SYSCALLS=1): all system calls of the server's processes per request, and of them"
      " the reads (read, readv, recvfrom, recvmsg); \"-\": not counted.\n")
print("| app | workload | server | req/s | µs CPU/req | ctx switches/req | syscalls / reads per req | CPU ratio vs peer |")
print("|---|---|---|---|---|---|---|---|")
for app, key, server, peer in rows:
    for w in ("hello", "stream", "upload"):
        s = stats(key, w)
        if s is None:
            print("| %s | %s | %s | not measured | | | | |" % (app, w, server))
            continue
        p = stats(peer, w) if peer else None
        ratio = "%.2f" % (p["cpu"] / s["cpu"]) if p and s["cpu"] else ("1.00" if not peer else "-")
        bad = " (%d non-2xx)" % s["bad"] if s["bad"] else ""
        print("| %s | %s | %s | %.0f%s | %.1f | %.2f | %s | %s |" % (app, w, server, s["rps"], bad, s["cpu"], s["sw"],
                                                              s["sys"], ratio))
print("\nThe C++ hello through the bindings (csgi.load_app, a WSGI callable) against a Python hello, both under"
      " gunicorn sync on one core (target: the C++ app costs no more CPU per request):\n")
print("| app | server | req/s | µs CPU/req | ctx switches/req | CPU ratio vs Python hello |")
print("|---|---|---|---|---|---|")
c, py = stats("gun_cxx", "hello"), stats("gun_py", "hello")
for name, s in (("C++ hello via bindings", c), ("Python hello", py)):
    if s is None:
        print("| %s | gunicorn sync | not measured | | | |" % name)
    else:
        ratio = "%.2f" % (py["cpu"] / s["cpu"]) if py and s["cpu"] else "-"
        print("| %s | gunicorn sync | %.0f | %.1f | %.2f | %s |" % (name, s["rps"], s["cpu"], s["sw"], ratio))
PYEOF
{
  echo
  echo "Commands (BUILD: the build directory; ROOT: the source tree; PORT free per run; the modules but"
  echo "django_project are written by bench/suites/python_apps.sh; wrk: \`taskset -c $lcpu wrk -t1 -c$conns -d${dur}s URL\`,"
  echo "the upload with a script that POSTs 102400 bytes):"
  echo
  for k in gun_cxx gun_py csgi_flask uwsgi_flask csgi_django gun_django gth_django csgi_st uv_st; do
    [ -n "${CMD[$k]:-}" ] && echo "- $k: \`${CMD[$k]}\`"
  done
} >> "$md"
cat "$md"
