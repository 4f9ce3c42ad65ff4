#!/usr/bin/env bash
# Python bindings benchmark: `bash python.sh BUILD_DIR OUT_DIR` writes OUT_DIR/python.md and
# bench/charts/python.png. wrk on loopback, one server process each, started here and stopped after.
#   1. C++ hello through the bindings under gunicorn sync  vs  pure-Python hello under gunicorn sync
#   2. Python hello: csgi serve --wsgi (when the csgi command has --wsgi) and python3 -m csgi serve --wsgi
#      vs uWSGI http-socket vs gunicorn
#   3. small Flask app: the same hosts
#   4. GIL: a C++ app sleeping 10 ms per request under gunicorn gthread, 4 threads vs 1 thread
#   5. ASGI: FastAPI and Starlette hellos on csgi serve --asgi and python3 -m csgi serve --asgi vs uvicorn
#      (uvloop + httptools) vs hypercorn; a C++ hello mounted in Starlette (csgi.asgi: the default, a pool,
#      threads=0) vs a Starlette Python hello, all under uvicorn; with the
#      server's CPU time per request (utime+stime of its process over the wrk run / requests)
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath "${2:-bench/out}")
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out" "$root/bench/charts"
md="$out/python.md"
. "$(dirname "$0")/lib/common.sh"
dur=10; [ "${BENCH_QUICK:-0}" = 1 ] && dur=3
reps=${BENCH_REPS:-3}  # wrk runs per case; the median req/s (and its latency) is reported
lib="$build/tests/bindings/libcsgi_pytest_apps.so"
export PYTHONPATH="$build/bindings/python" CSGI_TEST_APPS="$lib"
work=$(mktemp -d)
trap 'kill_server; rm -rf "$work"' EXIT
if [ ! -e "$lib" ] || [ ! -d "$build/bindings/python/csgi" ]; then
  echo "python bench: build csgi_python and csgi_pytest_apps first" >&2; exit 1
fi

cat > "$work/pyhello.py" <<'PYEOF'
def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", "13")])
    return [b"Hello, World!"]
PYEOF
cat > "$work/cxxhello.py" <<'PYEOF'
import os, csgi
application = csgi.load_app(os.environ["CSGI_TEST_APPS"], ["hello"])
PYEOF
cat > "$work/cxxwork.py" <<'PYEOF'
import os, csgi
application = csgi.load_app(os.environ["CSGI_TEST_APPS"], ["work", "10"])
PYEOF
cat > "$work/flasksite.py" <<'PYEOF'
from flask import Flask, jsonify, request
application = Flask(__name__)
@application.route("/")
def index():
    return jsonify(hello="world", n=len(request.args))
PYEOF
cat > "$work/fahello.py" <<'PYEOF'
from fastapi import FastAPI
app = FastAPI()
@app.get("/")
async def root():
    return {"hello": "world"}
PYEOF
cat > "$work/sthello.py" <<'PYEOF'
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
async def hello(request):
    return PlainTextResponse("Hello, World!")
app = Starlette(routes=[Route("/", hello)])
PYEOF
cat > "$work/stcxx.py" <<'PYEOF'
import os, csgi
from starlette.applications import Starlette
from starlette.routing import Mount
threads = os.environ.get("CSGI_ASGI_THREADS")  # unset: csgi.asgi's default
threads = None if threads is None else int(threads)
app = Starlette(routes=[Mount("/cxx", csgi.asgi(csgi.load_app(os.environ["CSGI_TEST_APPS"], ["hello"]), threads=threads))])
PYEOF
cat > "$work/stpy.py" <<'PYEOF'
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
async def hello(request):
    return PlainTextResponse("Hello, World!")
app = Starlette(routes=[Mount("/py", routes=[Route("/", hello)])])
PYEOF

pid=""
kill_server() { if [ -n "$pid" ]; then kill -TERM -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=""; fi; }
wait_port() {
  for _ in $(seq 200); do
    curl -s -o /dev/null "http://127.0.0.1:$1$2" && return 0
    sleep 0.05
  done
  echo "server on $1 did not answer" >&2; return 1
}
start() {  # start PORT PATH cmd...
  local port=$1 path=$2; shift 2
  (cd "$work" && exec setsid "$@" >"$work/server.log" 2>&1) &
  pid=$!
  wait_port "$port" "$path"
}
# run_wrk CONNS URL → "req/s latency_avg"
wrk_extra=()  # extra wrk arguments for the next measure (e.g. -H "Connection: close")
run_wrk() {
  wrk -t1 -c"$1" -d"${dur}s" --latency "${wrk_extra[@]}" "$2" 2>&1 | awk '
    /Requests\/sec/ {rps=$2} /^    Latency/ {lat=$2} /Non-2xx/ {bad=$NF}
    END {if (bad) rps=rps" (non-2xx: "bad")"; print rps, lat}'
}
declare -A RPS LAT CMD CPU
measure() {  # measure KEY CONNS PATH cmd... (cmd may use PORT): median of $reps wrk runs on one server
  local key=$1 conns=$2 path=$3; shift 3
  local port; port=$(free_port)
  local argv=("${@//PORT/$port}")
  if ! start "$port" "$path" "${argv[@]}"; then kill_server; RPS[$key]="failed"; LAT[$key]="-"; CMD[$key]="$*"; return; fi
  local runs=() r l all="" t0 t1 spid
  spid=$(pgrep -P "$pid" -n 2>/dev/null || echo "$pid")  # setsid's child when setsid forked
  [ -r "/proc/$spid/stat" ] || spid=$pid
  t0=$(tree_cpu_ticks "$spid")
  for _ in $(seq "$reps"); do
    read -r r l <<<"$(run_wrk "$conns" "http://127.0.0.1:$port$path")"
    runs+=("$r $l"); all="$all $r"
  done
  t1=$(tree_cpu_ticks "$spid")
  CPU[$key]=$($PY -c "import os, sys
ticks, dur, rps = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
n = sum(float(x) for x in rps) * dur  # requests served over the runs
print('%.1f' % (ticks * 1e6 / os.sysconf('SC_CLK_TCK') / n) if n else '-')" "$((t1 - t0))" "$dur" $all 2>/dev/null || echo -)
  kill_server
  read -r r l <<<"$(printf '%s\n' "${runs[@]}" | sort -g | sed -n "$(( (reps + 1) / 2 ))p")"
  local shown="${*//$build/BUILD}"
  RPS[$key]=$r; LAT[$key]=$l; CMD[$key]="${shown//$PY -m csgi/python3 -m csgi} ; wrk -t1 -c$conns -d${dur}s ${wrk_extra[*]} (x$reps, median)"
  echo "  $key: $r req/s, $l, ${CPU[$key]} µs CPU/request (runs:$all)"
}

G=("$PY" -m gunicorn --bind 127.0.0.1:PORT --workers 1 --log-level warning)
U=(uwsgi --plugin python3 --http-socket 127.0.0.1:PORT --processes 1 --disable-logging --die-on-term)

echo "python bench (${dur}s runs)"
measure gun_cxx 50 / "${G[@]}" --worker-class sync cxxhello:application
measure gun_py 50 / "${G[@]}" --worker-class sync pyhello:application
measure uwsgi_py 50 / "${U[@]}" --wsgi-file pyhello.py
measure uwsgi_cxx 50 / "${U[@]}" --wsgi-file cxxhello.py
measure uwsgi_flask 50 / "${U[@]}" --wsgi-file flasksite.py
measure gun_flask 50 / "${G[@]}" --worker-class sync flasksite:application
csgi_bin="$build/adapters/cli/csgi"
csgi_help=$([ -x "$csgi_bin" ] && "$csgi_bin" --help 2>&1)  # not piped into grep -q: pipefail + SIGPIPE
if [[ "$csgi_help" == *--wsgi* ]]; then
  measure csgi_py 50 / "$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1 --wsgi pyhello:application
  measure csgi_flask 50 / "$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1 --wsgi flasksite:application
  # The C++ hello on the same server: what the Python hello is held against (target ≥ 0.75×).
  measure csgi_cxx 50 / "$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1 --app "$build/bench/peers/libcsgi_bench_hello.so"
  # uWSGI's http-socket answers one request per connection: csgi the same way, for a like-for-like figure.
  wrk_extra=(-H "Connection: close")
  measure csgi_py_close 50 / "$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1 --wsgi pyhello:application
  wrk_extra=()
fi
# The same server run by /usr/bin/python3 itself (the csgi package's __main__), when the package has it.
if $PY -c 'from csgi._csgi import _main' 2>/dev/null; then
  measure pym_py 50 / "$PY" -m csgi serve --listen 127.0.0.1:PORT --threads 1 --wsgi pyhello:application
  measure pym_py0 50 / "$PY" -m csgi serve --listen 127.0.0.1:PORT --threads 1 --app-threads 0 --wsgi pyhello:application
  measure pym_flask 50 / "$PY" -m csgi serve --listen 127.0.0.1:PORT --threads 1 --wsgi flasksite:application
  measure pym_fa 50 / "$PY" -m csgi serve --listen 127.0.0.1:PORT --threads 1 --asgi fahello:app
  measure pym_st 50 / "$PY" -m csgi serve --listen 127.0.0.1:PORT --threads 1 --asgi sthello:app
fi
UV=("$PY" -m uvicorn --port PORT --loop uvloop --http httptools --log-level warning --no-access-log)
HC=("$PY" -m hypercorn --bind 127.0.0.1:PORT --workers 1)
if [[ "$csgi_help" == *--asgi* ]]; then
  measure asgi_csgi_fa 50 / "$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1 --asgi fahello:app
  measure asgi_csgi_st 50 / "$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1 --asgi sthello:app
fi
measure asgi_uv_fa 50 / "${UV[@]}" fahello:app
measure asgi_uv_st 50 / "${UV[@]}" sthello:app
measure asgi_hc_fa 50 / "${HC[@]}" fahello:app
measure asgi_uv_cxx 50 /cxx/ "${UV[@]}" stcxx:app
measure asgi_uv_cxxpool 50 /cxx/ env CSGI_ASGI_THREADS=32 "${UV[@]}" stcxx:app
measure asgi_uv_cxx0 50 /cxx/ env CSGI_ASGI_THREADS=0 "${UV[@]}" stcxx:app
measure asgi_uv_pymount 50 /py/ "${UV[@]}" stpy:app
measure gil_1 8 / "${G[@]}" --worker-class gthread --threads 1 cxxwork:application
measure gil_4 8 / "${G[@]}" --worker-class gthread --threads 4 cxxwork:application

# The bridges' own cost per call, in process (no server, no sockets): a C++ hello through csgi.asgi (pool
# and threads=0) under a minimal ASGI driver, against a Python ASGI hello; the WSGI bridge's per-call cost
# (a C++ hello called as a WSGI app with a gunicorn-like environ) against a Python WSGI hello.
BRIDGE=$($PY - <<'PYEOF' 2>&1
import asyncio, os, time, csgi
lib = os.environ["CSGI_TEST_APPS"]
hello = csgi.load_app(lib, ["hello"])
scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
         "path": "/", "raw_path": b"/", "root_path": "", "query_string": b"",
         "headers": [(b"host", b"127.0.0.1:8000"), (b"user-agent", b"wrk"), (b"accept", b"*/*")],
         "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000)}
msg = {"type": "http.request", "body": b"", "more_body": False}
async def receive(): return msg
async def send(m): pass
async def py_asgi(scope, receive, send):
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"13")]})
    await send({"type": "http.response.body", "body": b"Hello, World!"})
def per_call(app, n=20000):
    async def main():
        for _ in range(2000): await app(scope, receive, send)
        t = time.perf_counter()
        for _ in range(n): await app(scope, receive, send)
        return (time.perf_counter() - t) / n * 1e6
    return asyncio.run(main())
environ = {"REQUEST_METHOD": "GET", "SCRIPT_NAME": "", "PATH_INFO": "/", "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
           "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1", "REMOTE_PORT": "40000",
           "HTTP_HOST": "127.0.0.1:8000", "HTTP_USER_AGENT": "wrk", "HTTP_ACCEPT": "*/*", "RAW_URI": "/",
           "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.input": None, "wsgi.errors": None,
           "wsgi.multithread": False, "wsgi.multiprocess": False, "wsgi.run_once": False}
def sr(status, headers, exc_info=None): return None
def py_wsgi(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", "13")])
    return [b"Hello, World!"]
def wsgi_call(app, n=50000):
    for _ in range(2000): app(dict(environ), sr)
    t = time.perf_counter()
    for _ in range(n): app(dict(environ), sr)
    return (time.perf_counter() - t) / n * 1e6
pa, ai, ap = per_call(py_asgi), per_call(csgi.asgi(hello, threads=0)), per_call(csgi.asgi(hello, threads=32), 5000)
pw, cw = wsgi_call(py_wsgi), wsgi_call(hello)
print("| C++ hello via csgi.asgi(threads=32) (thread pool) | %.1f | %.1f |" % (ap, ap - pa))
print("| C++ hello via csgi.asgi(threads=0) | %.1f | %.1f |" % (ai, ai - pa))
print("| Python ASGI hello | %.1f | 0 |" % pa)
print("| C++ hello via csgi.App as WSGI | %.1f | %.1f |" % (cw, cw - pw))
print("| Python WSGI hello | %.1f | 0 |" % pw)
PYEOF
)
echo "$BRIDGE"

# The gunicorn rows again in instructions, which load does not move: gunicorn's sync worker handling
# requests over socketpairs under callgrind (bench/suites/gunicorn_call_cost.py).
GUNI_INSTR=""
if command -v valgrind >/dev/null; then
  GUNI_INSTR=$($PY "$root/bench/suites/gunicorn_call_cost.py" 200 1200 2>&1 | tail -3)
  echo "$GUNI_INSTR"
fi

ratio() { $PY -c "import sys
try: print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))
except Exception: print('-')" "${RPS[$1]:-x}" "${RPS[$2]:-x}"; }

{
  echo "## python"
  echo
  echo "Python bindings (bindings/, docs/python.md). wrk -t1 on loopback, one server process (one thread) each;"
  echo "median req/s of ${reps} runs of ${dur} s per case. gunicorn's sync worker and uWSGI's http-socket close each"
  echo "connection after one response, csgi keeps it alive (the 'Connection: close' row closes it per request too)."
  echo "The machine is shared (other builds running): the figures move ±20% between runs; compare ratios."
  echo
  echo "| case | server | req/s | avg latency | ratio | target |"
  echo "|---|---|---|---|---|---|"
  echo "| C++ hello via bindings | gunicorn sync | ${RPS[gun_cxx]} | ${LAT[gun_cxx]} | $(ratio gun_cxx gun_py) vs Python hello | ≥ 1.0 |"
  echo "| Python hello | gunicorn sync | ${RPS[gun_py]} | ${LAT[gun_py]} | 1.00 | |"
  echo "| C++ hello via bindings | uWSGI http-socket | ${RPS[uwsgi_cxx]} | ${LAT[uwsgi_cxx]} | $(ratio uwsgi_cxx uwsgi_py) vs Python hello | |"
  echo "| Python hello | uWSGI http-socket | ${RPS[uwsgi_py]} | ${LAT[uwsgi_py]} | 1.00 | |"
  if [ -n "${RPS[csgi_py]:-}" ]; then
    echo "| Python hello | csgi serve --wsgi | ${RPS[csgi_py]} | ${LAT[csgi_py]} | $(ratio csgi_py uwsgi_py) vs uWSGI | ≥ 5 |"
    echo "| C++ hello (app .so) | csgi serve --app | ${RPS[csgi_cxx]} | ${LAT[csgi_cxx]} | Python hello $(ratio csgi_py csgi_cxx) of it | ≥ 0.75 |"
    echo "| Python hello, Connection: close | csgi serve --wsgi | ${RPS[csgi_py_close]} | ${LAT[csgi_py_close]} | $(ratio csgi_py_close uwsgi_py) vs uWSGI | |"
    echo "| Flask app | csgi serve --wsgi | ${RPS[csgi_flask]} | ${LAT[csgi_flask]} | $(ratio csgi_flask uwsgi_flask) vs uWSGI | ≥ 2 |"
  else
    echo "| Python hello / Flask | csgi serve --wsgi | not measured: the csgi command has no --wsgi mode in this build | | | ≥ 5 / ≥ 2 |"
  fi
  if [ -n "${RPS[pym_py]:-}" ]; then
    echo "| Python hello | python3 -m csgi serve --wsgi | ${RPS[pym_py]} | ${LAT[pym_py]} | $(ratio pym_py uwsgi_py) vs uWSGI | ≥ 5 |"
    echo "| Python hello, --app-threads 0 | python3 -m csgi serve --wsgi | ${RPS[pym_py0]} | ${LAT[pym_py0]} | $(ratio pym_py0 uwsgi_py) vs uWSGI | ≥ 5 |"
    echo "| Flask app | python3 -m csgi serve --wsgi | ${RPS[pym_flask]} | ${LAT[pym_flask]} | $(ratio pym_flask uwsgi_flask) vs uWSGI | ≥ 2 |"
  fi
  echo "| Flask app | uWSGI http-socket | ${RPS[uwsgi_flask]} | ${LAT[uwsgi_flask]} | 1.00 | |"
  echo "| Flask app | gunicorn sync | ${RPS[gun_flask]} | ${LAT[gun_flask]} | $(ratio gun_flask uwsgi_flask) vs uWSGI | |"
  if [ -n "${RPS[asgi_csgi_fa]:-}" ]; then
    echo "| FastAPI hello | csgi serve --asgi | ${RPS[asgi_csgi_fa]} | ${LAT[asgi_csgi_fa]} | $(ratio asgi_csgi_fa asgi_uv_fa) vs uvicorn | ≥ 1.5 |"
    echo "| Starlette hello | csgi serve --asgi | ${RPS[asgi_csgi_st]} | ${LAT[asgi_csgi_st]} | $(ratio asgi_csgi_st asgi_uv_st) vs uvicorn | |"
  fi
  if [ -n "${RPS[pym_fa]:-}" ]; then
    echo "| FastAPI hello | python3 -m csgi serve --asgi | ${RPS[pym_fa]} | ${LAT[pym_fa]} | $(ratio pym_fa asgi_uv_fa) vs uvicorn | ≥ 1.5 |"
    echo "| Starlette hello | python3 -m csgi serve --asgi | ${RPS[pym_st]} | ${LAT[pym_st]} | $(ratio pym_st asgi_uv_st) vs uvicorn | |"
  fi
  echo "| FastAPI hello | uvicorn (uvloop, httptools) | ${RPS[asgi_uv_fa]} | ${LAT[asgi_uv_fa]} | 1.00 | |"
  echo "| Starlette hello | uvicorn (uvloop, httptools) | ${RPS[asgi_uv_st]} | ${LAT[asgi_uv_st]} | 1.00 | |"
  echo "| FastAPI hello | hypercorn | ${RPS[asgi_hc_fa]} | ${LAT[asgi_hc_fa]} | $(ratio asgi_hc_fa asgi_uv_fa) vs uvicorn | |"
  echo "| C++ hello mounted in Starlette (csgi.asgi, default) | uvicorn | ${RPS[asgi_uv_cxx]} | ${LAT[asgi_uv_cxx]} | $(ratio asgi_uv_cxx asgi_uv_pymount) vs Python mount | ≥ 1.0 |"
  echo "| C++ hello mounted in Starlette (csgi.asgi threads=32, thread pool) | uvicorn | ${RPS[asgi_uv_cxxpool]} | ${LAT[asgi_uv_cxxpool]} | $(ratio asgi_uv_cxxpool asgi_uv_pymount) vs Python mount | |"
  echo "| C++ hello mounted in Starlette (csgi.asgi threads=0) | uvicorn | ${RPS[asgi_uv_cxx0]} | ${LAT[asgi_uv_cxx0]} | $(ratio asgi_uv_cxx0 asgi_uv_pymount) vs Python mount | |"
  echo "| Starlette Python hello, mounted | uvicorn | ${RPS[asgi_uv_pymount]} | ${LAT[asgi_uv_pymount]} | 1.00 | |"
  echo "| C++ 10 ms sleep, 1 thread | gunicorn gthread | ${RPS[gil_1]} | ${LAT[gil_1]} | 1.00 | |"
  echo "| C++ 10 ms sleep, 4 threads | gunicorn gthread | ${RPS[gil_4]} | ${LAT[gil_4]} | $(ratio gil_4 gil_1) vs 1 thread | ~4 |"
  echo
  echo "Server CPU time per request (utime+stime of the server process and its child processes (a master and its worker), all threads, over its wrk runs), µs:"
  echo
  echo "| case | µs CPU/request |"
  echo "|---|---|"
  for k in gun_cxx gun_py csgi_cxx csgi_py pym_py pym_py0 csgi_flask pym_flask asgi_csgi_fa pym_fa asgi_uv_fa asgi_hc_fa \
           asgi_csgi_st pym_st asgi_uv_st asgi_uv_cxx asgi_uv_cxxpool asgi_uv_cxx0 asgi_uv_pymount; do
    [ -n "${CPU[$k]:-}" ] && echo "| $k | ${CPU[$k]} |"
  done
  echo
  echo "The bridges in process, wall µs per call of a serial loop ('cost' = minus the pure-Python hello; the"
  echo "thread-pool row is mostly the hand-over to a pool thread and back, not CPU):"
  echo
  echo "| call | µs/call | bridge cost µs |"
  echo "|---|---|---|"
  echo "$BRIDGE"
  echo
  if [ -n "$GUNI_INSTR" ]; then
    echo "gunicorn's sync worker in instructions per request (callgrind; each request through SyncWorker.handle()"
    echo "over a socketpair, 1,200 minus 200 requests; \`bench/suites/gunicorn_call_cost.py\`):"
    echo
    echo '```'
    echo "$GUNI_INSTR"
    echo '```'
    echo
  fi
  echo "![python bindings](charts/python.png)"
  echo
  echo "Commands (BUILD: the build directory; PORT chosen free per run; modules written by bench/suites/python.sh):"
  echo
  for k in gun_cxx gun_py uwsgi_cxx uwsgi_py csgi_cxx csgi_py csgi_py_close pym_py pym_py0 uwsgi_flask gun_flask csgi_flask \
           pym_flask gil_1 gil_4 asgi_csgi_fa asgi_csgi_st pym_fa pym_st asgi_uv_fa asgi_uv_st asgi_hc_fa asgi_uv_cxx \
           asgi_uv_cxxpool asgi_uv_cxx0 asgi_uv_pymount; do
    [ -n "${CMD[$k]:-}" ] && echo "- $k: \`${CMD[$k]}\`"
  done
} > "$out/python.md"

$PY - "$root/bench/charts/python.png" \
  "C++ hello\ngunicorn" "${RPS[gun_cxx]}" "Py hello\ngunicorn" "${RPS[gun_py]}" \
  "C++ hello\nuWSGI" "${RPS[uwsgi_cxx]}" "Py hello\nuWSGI" "${RPS[uwsgi_py]}" \
  "Py hello\ncsgi --wsgi" "${RPS[csgi_py]:-x}" "Py hello, close\ncsgi --wsgi" "${RPS[csgi_py_close]:-x}" \
  "Flask\nuWSGI" "${RPS[uwsgi_flask]}" "Flask\ngunicorn" "${RPS[gun_flask]}" \
  "Flask\ncsgi --wsgi" "${RPS[csgi_flask]:-x}" "Py hello\npython3 -m csgi" "${RPS[pym_py]:-x}" \
  "Flask\npython3 -m csgi" "${RPS[pym_flask]:-x}" <<'PYEOF' || echo "chart skipped" >&2
import sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
path, rest = sys.argv[1], sys.argv[2:]
labels, values = [], []
for name, v in zip(rest[::2], rest[1::2]):
    try:
        values.append(float(v.split()[0]))
        labels.append(name.replace("\\n", "\n"))
    except ValueError:
        pass
fig, ax = plt.subplots(figsize=(9, 3.6))
ax.bar(labels, values, color=["#c63" if "csgi" in l else "#2a6" if "C++" in l else "#68a" for l in labels])
ax.set_ylabel("req/s (wrk -t1 -c50)")
ax.set_title("csgi Python bindings: hello and Flask on WSGI hosts and on csgi serve --wsgi")
fig.tight_layout()
fig.savefig(path, dpi=90)
PYEOF
echo "wrote $out/python.md"
