#!/usr/bin/env bash
# WebSocket benchmark: `bash websocket.sh BUILD_DIR OUT_DIR` writes OUT_DIR/websocket.md. One server process
# each, one thread each, on loopback, started here and stopped after, in the same run:
#   csgi serve --app examples' libwebsocket_echo.so  vs  a Python `websockets` echo server (Debian
#   python3-websockets, asyncio)  vs  a Node `ws` echo server (npm `ws` 8, installed into a cache dir).
# 1. Echo: C connections (default 32), each sending a 64-byte text message and waiting for its echo, for D
#    seconds (a Node `ws` client): messages/s, latency p50/p99, and the server's CPU time per message
#    (utime+stime over the run: steadier than messages/s on a shared machine).
# 2. Memory per idle WebSocket: the server's RSS with 1000 idle connections open minus its RSS before.
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath "${2:-bench/out}")
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
md="$out/websocket.md"
. "$(dirname "$0")/lib/common.sh"
dur=${BENCH_SECONDS:-10}; [ "${BENCH_QUICK:-0}" = 1 ] && dur=3
conns=${BENCH_CONNS:-32}
idle=${BENCH_IDLE:-1000}
csgi="$build/adapters/cli/csgi"
echo_so="$build/examples/libwebsocket_echo.so"
cache=${BENCH_CACHE:-$HOME/.cache/csgi-bench/node}
work=$(mktemp -d)
pid=""
kill_server() { if [ -n "$pid" ]; then kill -TERM -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=""; fi; }
trap 'kill_server; rm -rf "$work"' EXIT
if [ ! -x "$csgi" ] || [ ! -e "$echo_so" ]; then
  echo "websocket bench: build csgi_cli and websocket_echo first" >&2; exit 1
fi
if [ ! -d "$cache/node_modules/ws" ]; then
  mkdir -p "$cache" && npm install --prefix "$cache" --no-audit --no-fund ws@8 >/dev/null || {
    echo "websocket bench: npm install ws failed" >&2; exit 1; }
fi
export NODE_PATH="$cache/node_modules"

cat > "$work/py_echo.py" <<'EOF'
import asyncio, sys
import websockets
async def echo(ws, path=None):
    async for m in ws:
        await ws.send(m)
async def main():
    async with websockets.serve(echo, "127.0.0.1", int(sys.argv[1]), max_size=16 << 20, compression=None):
        await asyncio.Future()
asyncio.run(main())
EOF
cat > "$work/node_echo.js" <<'EOF'
const { WebSocketServer } = require('ws');
const wss = new WebSocketServer({ host: '127.0.0.1', port: +process.argv[2], perMessageDeflate: false });
wss.on('connection', (ws) => ws.on('message', (m, binary) => ws.send(m, { binary })));
EOF
cat > "$work/client.js" <<'EOF'
// node client.js URL CONNS SECONDS  → "msgs LATENCY_P50_US LATENCY_P99_US"
// node client.js URL N idle          → opens N connections, prints "open", holds them until stdin closes
const WebSocket = require('ws');
const [url, n, arg] = [process.argv[2], +process.argv[3], process.argv[4]];
if (arg === 'idle') {
  let open = 0;
  for (let i = 0; i < n; i++) {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.on('open', () => { if (++open === n) console.log('open'); });
    ws.on('error', (e) => { console.error(e.message); process.exit(1); });
  }
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
} else {
  const msg = 'x'.repeat(64), lat = [];
  let count = 0, running = true;
  setTimeout(() => { running = false; }, +arg * 1000);
  let done = 0;
  for (let i = 0; i < n; i++) {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    let t0;
    const send = () => { t0 = process.hrtime.bigint(); ws.send(msg); };
    ws.on('open', send);
    ws.on('message', () => {
      lat.push(Number(process.hrtime.bigint() - t0) / 1000);
      count++;
      if (running) send(); else { ws.close(); if (++done === n) report(); }
    });
  }
  function report() {
    lat.sort((a, b) => a - b);
    const q = (p) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))].toFixed(0);
    console.log(`${count} ${q(0.5)} ${q(0.99)}`);
    process.exit(0);
  }
}
EOF

start() {  # start PORT cmd...
  local port=$1; shift
  (cd "$work" && exec setsid "$@" >"$work/server.log" 2>&1) &
  pid=$!
  for _ in $(seq 200); do
    $PY -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "server on $port did not start" >&2; return 1
}
# The server's process: the one listening (setsid's child may be a shell or the server itself).
server_pid() { local p; p=$(pgrep -s "$pid" | tail -1); echo "${p:-$pid}"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

declare -A label=([csgi]="csgi serve (Beast websocket, 1 io thread)" [python]="Python websockets 10.4 (asyncio)"
                  [node]="Node ws 8 ($(node --version))")
run_server() {  # run_server NAME PORT
  case $1 in
    csgi) start "$2" "$csgi" serve --app "$echo_so" --listen "127.0.0.1:$2" --threads 1 ;;
    python) start "$2" "$PY" "$work/py_echo.py" "$2" ;;
    node) start "$2" node "$work/node_echo.js" "$2" ;;
  esac
}
path_of() { [ "$1" = csgi ] && echo /ws || echo /; }

hz=$(getconf CLK_TCK)
{
  echo "## websocket"
  echo
  echo "$(date -u +%F), $(nproc) cores shared with other work (noisy: compare CPU µs/message more than msgs/s),"
  echo "echo of 64-byte text messages, $conns connections each waiting for its echo, ${dur} s, Node \`ws\` client."
  echo "Command: \`bash bench/suites/websocket.sh build out\`."
  echo
  echo "| server | messages/s | p50 µs | p99 µs | server CPU µs/message | RSS per idle WebSocket (KiB, $idle open) |"
  echo "|---|---|---|---|---|---|"
} > "$out/websocket.md"
for s in csgi python node; do
  port=$(free_port)
  run_server "$s" "$port" || continue
  sp=$(server_pid)
  url="ws://127.0.0.1:$port$(path_of "$s")"
  node "$work/client.js" "$url" 4 1 >/dev/null  # warm-up
  c0=$(cpu_ticks "$sp")
  read -r msgs p50 p99 < <(node "$work/client.js" "$url" "$conns" "$dur")
  c1=$(cpu_ticks "$sp")
  cpu_us=$($PY -c "print(f'{($c1 - $c0) * 1e6 / $hz / max($msgs, 1):.1f}')")
  rate=$($PY -c "print(int($msgs / $dur))")
  sleep 0.5
  r0=$(rss_kb "$sp")
  exec 7> >(node "$work/client.js" "$url" "$idle" idle > "$work/idle.out")
  for _ in $(seq 600); do grep -q open "$work/idle.out" 2>/dev/null && break; sleep 0.05; done
  sleep 1
  r1=$(rss_kb "$sp")
  exec 7>&-
  per=$($PY -c "print(f'{($r1 - $r0) / $idle:.1f}')")
  echo "| ${label[$s]} | $rate | $p50 | $p99 | $cpu_us | $per |" >> "$out/websocket.md"
  echo "$s: $rate msg/s p50 $p50 µs p99 $p99 µs, $cpu_us CPU µs/msg, $per KiB/idle ws (RSS $r0 → $r1 KiB)" >&2
  kill_server
  sleep 0.5
done
cat "$out/websocket.md"
