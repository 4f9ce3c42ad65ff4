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
#   6. ASGI per core: the FastAPI `def` endpoint (run on anyio's worker threads) and `async def` endpoint
#      on csgi serve --asgi and python3 -m csgi serve --asgi vs uvicorn (uvloop + httptools), each server
#      confined to CPU 0 and wrk to CPU 1 (taskset), with CPU µs and context switches per request
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
trap 'kill_servers; rm -rf "$work"' EXIT
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
cat > "$work/fadefhello.py" <<'PYEOF'
from fastapi import FastAPI
app = FastAPI()
@app.get("/")
def root():
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

declare -A PID PORT URLPATH CONNS EXTRA
kill_pid() { kill -TERM -- "-$1" 2>/dev/null; wait "$1" 2>/dev/null; }
kill_servers() { local k; for k in "${!PID[@]}"; do kill_pid "${PID[$k]}"; done; PID=(); }
wait_port() {
  for _ in $(seq 200); do
    curl -s -o /dev/null "http://127.0.0.1:$1$2" && return 0
    sleep 0.05
  done
  echo "server on $1 did not answer" >&2; return 1
}
# run_wrk CONNS URL → "req/s latency_avg requests"
wrk_extra=()  # extra wrk arguments for the next measure (e.g. -H "Connection: close")
wrk_pin=()    # the next serve's wrk prefix (taskset) when its server is confined
run_wrk() {
  "${wrk_pin[@]}" wrk -t1 -c"$1" -d"${dur}s" --latency "${wrk_extra[@]}" "$2" 2>&1 | awk '
    /Requests\/sec/ {rps=$2} /^    Latency/ {lat=$2} /Non-2xx/ {bad=$NF} / requests in / {n=$1}
    END {if (bad) rps=rps" (non-2xx: "bad")"; print rps, lat, n + 0}'
}
declare -A RPS LAT CMD CPU CTX RUNS PIN
# serve KEY CONNS PATH cmd... (cmd may use PORT): starts the server of a case; `measure` runs it.
# wrk_extra, as it is at this call, goes with the case.
serve() {
  local key=$1 conns=$2 path=$3; shift 3
  local port; port=$(free_port)
  local argv=("${@//PORT/$port}")
  (cd "$work" && exec setsid "${argv[@]}" >"$work/$key.log" 2>&1) &
  PID[$key]=$!; PORT[$key]=$port; URLPATH[$key]=$path; CONNS[$key]=$conns; EXTRA[$key]="${wrk_extra[*]@Q}"
  PIN[$key]="${wrk_pin[*]@Q}"
  local shown="${*//$build/BUILD}"
  CMD[$key]="${shown//$PY -m csgi/python3 -m csgi} ; ${wrk_pin[*]}${wrk_pin[*]:+ }wrk -t1 -c$conns -d${dur}s ${wrk_extra[*]} (x$reps, median)"
  if ! wait_port "$port" "$path"; then kill_pid "${PID[$key]}"; unset "PID[$key]"; RPS[$key]="failed"; LAT[$key]="-"; fi
}
# tree_pids PID: the process and all its descendants; tree_sum FN PID: FN (cpu_ticks, ctx_switches) summed over them.
tree_pids() { local p; echo "$1"; for p in $(pgrep -P "$1"); do tree_pids "$p"; done; }
tree_sum() { local total=0 p; for p in $(tree_pids "$2"); do total=$((total + $("$1" "$p"))); done; echo "$total"; }
# measure KEY...: $reps rounds, each one wrk run per started case in turn (so that the cases compared
# share the machine's load); the median req/s (and its latency) and the server's CPU time per request
# and context switches per request (voluntary + nonvoluntary, its live threads) over its own runs. Then
# stops those servers.
measure() {
  local key round r l n spid t0 t1 c0 c1
  declare -A runs=() all=() ticks=() switches=() served=()
  for round in $(seq "$reps"); do
    for key in "$@"; do
      [ -n "${PID[$key]:-}" ] || continue
      spid=${PID[$key]}  # with setsid's child when setsid forked, and a master's workers
      t0=$(tree_sum cpu_ticks "$spid"); c0=$(tree_sum ctx_switches "$spid")
      eval "wrk_extra=(${EXTRA[$key]})"; eval "wrk_pin=(${PIN[$key]})"
      read -r r l n <<<"$(run_wrk "${CONNS[$key]}" "http://127.0.0.1:${PORT[$key]}${URLPATH[$key]}")"
      wrk_extra=(); wrk_pin=()
      t1=$(tree_sum cpu_ticks "$spid"); c1=$(tree_sum ctx_switches "$spid")
      runs[$key]+="$r $l"$'\n'; all[$key]+=" $r"; ticks[$key]=$(( ${ticks[$key]:-0} + t1 - t0 ))
      switches[$key]=$(( ${switches[$key]:-0} + c1 - c0 )); served[$key]=$(( ${served[$key]:-0} + ${n:-0} ))
    done
  done
  for key in "$@"; do
    [ -n "${PID[$key]:-}" ] || continue
    kill_pid "${PID[$key]}"; unset "PID[$key]"
    CPU[$key]=$(per_request "$(ticks_us "${ticks[$key]}")" "${served[$key]}")
    CTX[$key]=$(per_request "${switches[$key]}" "${served[$key]}")
    read -r r l <<<"$(printf '%s' "${runs[$key]}" | sort -g | sed -n "$(( (reps + 1) / 2 ))p")"
    RPS[$key]=$r; LAT[$key]=$l; RUNS[$key]=${all[$key]}
    echo "  $key: $r req/s, $l, ${CPU[$key]} µs CPU/request, ${CTX[$key]} context switches/request (runs:${all[$key]})"
  done
}

G=("$PY" -m gunicorn --bind 127.0.0.1:PORT --workers 1 --log-level warning)
U=(uwsgi --plugin python3 --http-socket 127.0.0.1:PORT --processes 1 --disable-logging --die-on-term)

echo "python bench (${dur}s runs; the cases of a group alternate, run for run)"
csgi_bin="$build/adapters/cli/csgi"
csgi_help=$([ -x "$csgi_bin" ] && "$csgi_bin" --help 2>&1)  # not piped into grep -q: pipefail + SIGPIPE
pym=0; $PY -c 'from csgi._csgi import _main' 2>/dev/null && pym=1  # python3 -m csgi serve (the package's __main__)
UV=("$PY" -m uvicorn --port PORT --loop uvloop --http httptools --log-level warning --no-access-log)
HC=("$PY" -m hypercorn --bind 127.0.0.1:PORT --workers 1)

serve gun_cxx 50 / "${G[@]}" --worker-class sync cxxhello:application
serve gun_py 50 / "${G[@]}" --worker-class sync pyhello:application
measure gun_cxx gun_py

# The Python hello: uWSGI, csgi serve and python3 -m csgi serve, with the C++ hello on csgi's server as what
# the Python hello is held against (target ≥ 0.75×).
serve uwsgi_py 50 / "${U[@]}" --wsgi-file pyhello.py
serve uwsgi_cxx 50 / "${U[@]}" --wsgi-file cxxhello.py
if [[ "$csgi_help" == *--wsgi* ]]; then
  serve csgi_py 50 / "$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1 --wsgi pyhello:application
  serve csgi_cxx 50 / "$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1 --app "$build/bench/peers/libcsgi_bench_hello.so"
  # uWSGI's http-socket answers one request per connection: csgi the same way, for a like-for-like figure.
  wrk_extra=(-H "Connection: close")
  serve csgi_py_close 50 / "$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1 --wsgi pyhello:application
  wrk_extra=()
fi
if [ "$pym" = 1 ]; then
  serve pym_py 50 / "$PY" -m csgi serve --listen 127.0.0.1:PORT --threads 1 --wsgi pyhello:application
  serve pym_py0 50 / "$PY" -m csgi serve --listen 127.0.0.1:PORT --threads 1 --app-threads 0 --wsgi pyhello:application
fi
measure uwsgi_py uwsgi_cxx csgi_py csgi_cxx csgi_py_close pym_py pym_py0

serve uwsgi_flask 50 / "${U[@]}" --wsgi-file flasksite.py
serve gun_flask 50 / "${G[@]}" --worker-class sync flasksite:application
[[ "$csgi_help" == *--wsgi* ]] && serve csgi_flask 50 / "$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1 --wsgi flasksite:application
[ "$pym" = 1 ] && serve pym_flask 50 / "$PY" -m csgi serve --listen 127.0.0.1:PORT --threads 1 --wsgi flasksite:application
measure uwsgi_flask gun_flask csgi_flask pym_flask

# The ASGI rows per core: every server (all its threads) confined to CPU 0, wrk to CPU 1.
C0=(taskset -c 0); wrk_pin=(taskset -c 1)
for app in fadef fa st; do
  [[ "$csgi_help" == *--asgi* ]] && serve "asgi_csgi_$app" 50 / "${C0[@]}" "$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1 --asgi "${app}hello:app"
  [ "$pym" = 1 ] && serve "pym_$app" 50 / "${C0[@]}" "$PY" -m csgi serve --listen 127.0.0.1:PORT --threads 1 --asgi "${app}hello:app"
  serve "asgi_uv_$app" 50 / "${C0[@]}" "${UV[@]}" "${app}hello:app"
done
serve asgi_hc_fa 50 / "${C0[@]}" "${HC[@]}" fahello:app
measure asgi_csgi_fadef pym_fadef asgi_uv_fadef
measure asgi_csgi_fa pym_fa asgi_uv_fa asgi_hc_fa
measure asgi_csgi_st pym_st asgi_uv_st

serve asgi_uv_cxx 50 /cxx/ "${C0[@]}" "${UV[@]}" stcxx:app
serve asgi_uv_cxxpool 50 /cxx/ "${C0[@]}" env CSGI_ASGI_THREADS=32 "${UV[@]}" stcxx:app
serve asgi_uv_cxx0 50 /cxx/ "${C0[@]}" env CSGI_ASGI_THREADS=0 "${UV[@]}" stcxx:app
serve asgi_uv_pymount 50 /py/ "${C0[@]}" "${UV[@]}" stpy:app
wrk_pin=()
measure asgi_uv_cxx asgi_uv_cxxpool asgi_uv_cxx0 asgi_uv_pymount

# Two worker processes each, on the whole machine (not confined).
UV2=("${UV[@]}" --workers 2)
for app in fadef fa; do
  [[ "$csgi_help" == *--asgi* ]] && serve "w2_csgi_$app" 50 / "$csgi_bin" serve --listen 127.0.0.1:PORT --workers 2 --threads 1 --asgi "${app}hello:app"
  [ "$pym" = 1 ] && serve "w2_pym_$app" 50 / "$PY" -m csgi serve --listen 127.0.0.1:PORT --workers 2 --threads 1 --asgi "${app}hello:app"
  serve "w2_uv_$app" 50 / "${UV2[@]}" "${app}hello:app"
  measure "w2_csgi_$app" "w2_pym_$app" "w2_uv_$app"
done

serve gil_1 8 / "${G[@]}" --worker-class gthread --threads 1 cxxwork:application
serve gil_4 8 / "${G[@]}" --worker-class gthread --threads 4 cxxwork:application
measure gil_1 gil_4

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

# ratio A B: the medians' ratio, and the range of the ratios round by round when both ran in the same rounds.
ratio() { $PY -c "import sys
try: r = '%.2f' % (float(sys.argv[1]) / float(sys.argv[2]))
except Exception: print('-'); sys.exit()
try:
    each = [float(a) / float(b) for a, b in zip(sys.argv[3].split(), sys.argv[4].split(), strict=True)]
    if len(each) > 1: r += ' (rounds %.2f–%.2f)' % (min(each), max(each))
except Exception: pass
print(r)" "${RPS[$1]:-x}" "${RPS[$2]:-x}" "${RUNS[$1]:-}" "${RUNS[$2]:-}"; }

{
  echo "## python"
  echo
  echo "Python bindings (bindings/, docs/python.md). wrk -t1 on loopback, one server process (one thread) each;"
  echo "median req/s of ${reps} runs of ${dur} s per case. The cases compared with each other (gunicorn; the Python"
  echo "hello; Flask; FastAPI; Starlette; the mounts; the GIL) run side by side: all of a group's servers are up and"
  echo "its wrk runs alternate between them, so that they share the machine's load run for run. gunicorn's sync"
  echo "worker and uWSGI's http-socket close each connection after one response, csgi keeps it alive (the"
  echo "'Connection: close' row closes it per request too). Load from other work moves the figures; compare ratios."
  echo "A ratio is of the two medians; in brackets, the lowest and highest of the ratios of the runs that took turns."
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
    echo "| FastAPI def endpoint | csgi serve --asgi | ${RPS[asgi_csgi_fadef]} | ${LAT[asgi_csgi_fadef]} | $(ratio asgi_csgi_fadef asgi_uv_fadef) vs uvicorn | ≥ 1.2 |"
    echo "| FastAPI hello | csgi serve --asgi | ${RPS[asgi_csgi_fa]} | ${LAT[asgi_csgi_fa]} | $(ratio asgi_csgi_fa asgi_uv_fa) vs uvicorn | ≥ 1.5 |"
    echo "| Starlette hello | csgi serve --asgi | ${RPS[asgi_csgi_st]} | ${LAT[asgi_csgi_st]} | $(ratio asgi_csgi_st asgi_uv_st) vs uvicorn | |"
  fi
  if [ -n "${RPS[pym_fa]:-}" ]; then
    echo "| FastAPI def endpoint | python3 -m csgi serve --asgi | ${RPS[pym_fadef]} | ${LAT[pym_fadef]} | $(ratio pym_fadef asgi_uv_fadef) vs uvicorn | ≥ 1.2 |"
    echo "| FastAPI hello | python3 -m csgi serve --asgi | ${RPS[pym_fa]} | ${LAT[pym_fa]} | $(ratio pym_fa asgi_uv_fa) vs uvicorn | ≥ 1.5 |"
    echo "| Starlette hello | python3 -m csgi serve --asgi | ${RPS[pym_st]} | ${LAT[pym_st]} | $(ratio pym_st asgi_uv_st) vs uvicorn | |"
  fi
  echo "| FastAPI def endpoint | uvicorn (uvloop, httptools) | ${RPS[asgi_uv_fadef]} | ${LAT[asgi_uv_fadef]} | 1.00 | |"
  echo "| FastAPI hello | uvicorn (uvloop, httptools) | ${RPS[asgi_uv_fa]} | ${LAT[asgi_uv_fa]} | 1.00 | |"
  echo "| Starlette hello | uvicorn (uvloop, httptools) | ${RPS[asgi_uv_st]} | ${LAT[asgi_uv_st]} | 1.00 | |"
  for app in fadef fa; do
    name="FastAPI def endpoint"; [ "$app" = fa ] && name="FastAPI hello"
    [ -n "${RPS[w2_csgi_$app]:-}" ] && echo "| $name, --workers 2 | csgi serve --asgi | ${RPS[w2_csgi_$app]} | ${LAT[w2_csgi_$app]} | $(ratio "w2_csgi_$app" "w2_uv_$app") vs uvicorn --workers 2 | ≥ 1.0 |"
    [ -n "${RPS[w2_pym_$app]:-}" ] && echo "| $name, --workers 2 | python3 -m csgi serve --asgi | ${RPS[w2_pym_$app]} | ${LAT[w2_pym_$app]} | $(ratio "w2_pym_$app" "w2_uv_$app") vs uvicorn --workers 2 | ≥ 1.0 |"
    echo "| $name, --workers 2 | uvicorn --workers 2 | ${RPS[w2_uv_$app]:-} | ${LAT[w2_uv_$app]:-} | 1.00 | |"
  done
  echo "| FastAPI hello | hypercorn | ${RPS[asgi_hc_fa]} | ${LAT[asgi_hc_fa]} | $(ratio asgi_hc_fa asgi_uv_fa) vs uvicorn | |"
  echo "| C++ hello mounted in Starlette (csgi.asgi, default) | uvicorn | ${RPS[asgi_uv_cxx]} | ${LAT[asgi_uv_cxx]} | $(ratio asgi_uv_cxx asgi_uv_pymount) vs Python mount | ≥ 1.0 |"
  echo "| C++ hello mounted in Starlette (csgi.asgi threads=32, thread pool) | uvicorn | ${RPS[asgi_uv_cxxpool]} | ${LAT[asgi_uv_cxxpool]} | $(ratio asgi_uv_cxxpool asgi_uv_pymount) vs Python mount | |"
  echo "| C++ hello mounted in Starlette (csgi.asgi threads=0) | uvicorn | ${RPS[asgi_uv_cxx0]} | ${LAT[asgi_uv_cxx0]} | $(ratio asgi_uv_cxx0 asgi_uv_pymount) vs Python mount | |"
  echo "| Starlette Python hello, mounted | uvicorn | ${RPS[asgi_uv_pymount]} | ${LAT[asgi_uv_pymount]} | 1.00 | |"
  echo "| C++ 10 ms sleep, 1 thread | gunicorn gthread | ${RPS[gil_1]} | ${LAT[gil_1]} | 1.00 | |"
  echo "| C++ 10 ms sleep, 4 threads | gunicorn gthread | ${RPS[gil_4]} | ${LAT[gil_4]} | $(ratio gil_4 gil_1) vs 1 thread | ~4 |"
  echo
  echo "The ASGI rows (FastAPI, Starlette, hypercorn, the mounts; not the --workers 2 rows) are per core: each server, all its threads, confined to"
  echo "CPU 0 and wrk to CPU 1 (taskset). Per request, the server's CPU time (utime+stime of the server process and its"
  echo "child processes (a master and its worker), all threads, over its wrk runs) and its context switches (voluntary +"
  echo "nonvoluntary, summed over /proc/PID/task/*/status of the threads alive at the end of each run):"
  echo
  echo "| case | µs CPU/request | context switches/request |"
  echo "|---|---|---|"
  for k in gun_cxx gun_py csgi_cxx csgi_py pym_py pym_py0 csgi_flask pym_flask asgi_csgi_fadef pym_fadef asgi_uv_fadef \
           asgi_csgi_fa pym_fa asgi_uv_fa asgi_hc_fa asgi_csgi_st pym_st asgi_uv_st asgi_uv_cxx asgi_uv_cxxpool asgi_uv_cxx0 \
           asgi_uv_pymount w2_csgi_fadef w2_pym_fadef w2_uv_fadef w2_csgi_fa w2_pym_fa w2_uv_fa; do
    [ -n "${CPU[$k]:-}" ] && echo "| $k | ${CPU[$k]} | ${CTX[$k]} |"
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
           pym_flask gil_1 gil_4 asgi_csgi_fadef pym_fadef asgi_uv_fadef asgi_csgi_fa asgi_csgi_st pym_fa pym_st \
           asgi_uv_fa asgi_uv_st asgi_hc_fa asgi_uv_cxx \
           asgi_uv_cxxpool asgi_uv_cxx0 asgi_uv_pymount w2_csgi_fadef w2_pym_fadef w2_uv_fadef w2_csgi_fa w2_pym_fa w2_uv_fa; do
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
