#!/usr/bin/env bash
# Python bindings benchmark: `bash python.sh BUILD_DIR OUT_DIR` writes OUT_DIR/python.md and
# bench/charts/python.png. wrk on loopback, one server process each, started here and stopped after.
#   1. C++ hello through the bindings under gunicorn sync  vs  pure-Python hello under gunicorn sync
#   2. Python hello: csgi serve --wsgi (when the csgi command has --wsgi) vs uWSGI http-socket vs gunicorn
#   3. small Flask app: the same hosts
#   4. GIL: a C++ app sleeping 10 ms per request under gunicorn gthread, 4 threads vs 1 thread
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath "${2:-bench/out}")
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out" "$root/bench/charts"
PY=/usr/bin/python3
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

pid=""
kill_server() { if [ -n "$pid" ]; then kill -TERM -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=""; fi; }
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
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
declare -A RPS LAT CMD
measure() {  # measure KEY CONNS PATH cmd... (cmd may use PORT): median of $reps wrk runs on one server
  local key=$1 conns=$2 path=$3; shift 3
  local port; port=$(free_port)
  local argv=("${@//PORT/$port}")
  if ! start "$port" "$path" "${argv[@]}"; then kill_server; RPS[$key]="failed"; LAT[$key]="-"; CMD[$key]="${argv[*]}"; return; fi
  local runs=() r l all=""
  for _ in $(seq "$reps"); do
    read -r r l <<<"$(run_wrk "$conns" "http://127.0.0.1:$port$path")"
    runs+=("$r $l"); all="$all $r"
  done
  kill_server
  read -r r l <<<"$(printf '%s\n' "${runs[@]}" | sort -g | sed -n "$(( (reps + 1) / 2 ))p")"
  RPS[$key]=$r; LAT[$key]=$l; CMD[$key]="${argv[*]} ; wrk -t1 -c$conns -d${dur}s ${wrk_extra[*]} (x$reps, median)"
  echo "  $key: $r req/s, $l (runs:$all)"
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
  # uWSGI's http-socket answers one request per connection: csgi the same way, for a like-for-like figure.
  wrk_extra=(-H "Connection: close")
  measure csgi_py_close 50 / "$csgi_bin" serve --listen 127.0.0.1:PORT --threads 1 --wsgi pyhello:application
  wrk_extra=()
fi
measure gil_1 8 / "${G[@]}" --worker-class gthread --threads 1 cxxwork:application
measure gil_4 8 / "${G[@]}" --worker-class gthread --threads 4 cxxwork:application

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
    echo "| Python hello | csgi serve --wsgi | ${RPS[csgi_py]} | ${LAT[csgi_py]} | $(ratio csgi_py uwsgi_py) vs uWSGI | ≥ 1.5 |"
    echo "| Python hello, Connection: close | csgi serve --wsgi | ${RPS[csgi_py_close]} | ${LAT[csgi_py_close]} | $(ratio csgi_py_close uwsgi_py) vs uWSGI | |"
    echo "| Flask app | csgi serve --wsgi | ${RPS[csgi_flask]} | ${LAT[csgi_flask]} | $(ratio csgi_flask uwsgi_flask) vs uWSGI | ≥ 1.2 |"
  else
    echo "| Python hello / Flask | csgi serve --wsgi | not measured: the csgi command has no --wsgi mode in this build | | | ≥ 1.5 / ≥ 1.2 |"
  fi
  echo "| Flask app | uWSGI http-socket | ${RPS[uwsgi_flask]} | ${LAT[uwsgi_flask]} | 1.00 | |"
  echo "| Flask app | gunicorn sync | ${RPS[gun_flask]} | ${LAT[gun_flask]} | $(ratio gun_flask uwsgi_flask) vs uWSGI | |"
  echo "| C++ 10 ms sleep, 1 thread | gunicorn gthread | ${RPS[gil_1]} | ${LAT[gil_1]} | 1.00 | |"
  echo "| C++ 10 ms sleep, 4 threads | gunicorn gthread | ${RPS[gil_4]} | ${LAT[gil_4]} | $(ratio gil_4 gil_1) vs 1 thread | ~4 |"
  echo
  echo "![python bindings](charts/python.png)"
  echo
  echo "Commands (PORT chosen free per run; modules written by bench/suites/python.sh):"
  echo
  for k in gun_cxx gun_py uwsgi_cxx uwsgi_py csgi_py csgi_py_close uwsgi_flask gun_flask csgi_flask gil_1 gil_4; do
    [ -n "${CMD[$k]:-}" ] && echo "- $k: \`${CMD[$k]}\`"
  done
} > "$out/python.md"

$PY - "$root/bench/charts/python.png" \
  "C++ hello\ngunicorn" "${RPS[gun_cxx]}" "Py hello\ngunicorn" "${RPS[gun_py]}" \
  "C++ hello\nuWSGI" "${RPS[uwsgi_cxx]}" "Py hello\nuWSGI" "${RPS[uwsgi_py]}" \
  "Py hello\ncsgi --wsgi" "${RPS[csgi_py]:-x}" "Py hello, close\ncsgi --wsgi" "${RPS[csgi_py_close]:-x}" \
  "Flask\nuWSGI" "${RPS[uwsgi_flask]}" "Flask\ngunicorn" "${RPS[gun_flask]}" \
  "Flask\ncsgi --wsgi" "${RPS[csgi_flask]:-x}" <<'PYEOF' || echo "chart skipped" >&2
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
