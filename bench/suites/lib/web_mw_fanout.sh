#!/usr/bin/env bash
# Part of the web_mw suite (bench/suites/web_mw.sh): broadcast fan-out to CLIENTS real WebSocket
# subscribers of one topic, through `csgi serve --app libweb_mw_app.so` (bench/web_mw_app.cpp), measured
# by bench/ws_fanout_client.cpp: MESSAGES messages published one after the other (POST /publish, 10 ms
# after the previous one reached every client), each timed from just before its POST was written until
# the last client read it; RUNS runs of each server, taking turns, with the messages of all runs pooled.
#   bash web_mw_fanout.sh BUILD_DIR OUT_MD REDIS_PORT REDIS_PID CLIENTS MESSAGES RUNS
# Two servers: the local hub (one process, one io thread, the hub's 2 delivery threads) and RedisBroadcast
# with --workers 2 (the clients spread over both workers by the kernel; a message published on one reaches
# the other through Redis). The server's processes and redis-server run on CPU ${FANOUT_SERVER_CPUS:-0},
# the client on CPU ${FANOUT_CLIENT_CPUS:-1} (taskset), and each side's CPU time over the publishing is
# reported beside the latencies.
set -euo pipefail
build=$1 md=$2 rport=$3 rpid=$4 clients=$5 messages=$6 runs=$7
. "$(dirname "$0")/common.sh"
csgi="$build/adapters/cli/csgi"
app="$build/bench/libweb_mw_app.so"
client="$build/bench/ws_fanout_client"
server_cpus=${FANOUT_SERVER_CPUS:-0}
client_cpus=${FANOUT_CLIENT_CPUS:-1}
tmp=$(mktemp -d)
spid=
cleanup() { [ -n "$spid" ] && { stop_pid "$spid" || true; }; rm -rf "$tmp"; }
trap cleanup EXIT

# Each client holds one socket and the server one per client.
need=$((clients + 100))
[ "$(ulimit -n)" -ge "$need" ] || ulimit -n "$need" 2>/dev/null || {
  printf 'Fan-out not measured: %s WebSockets need %s open files, `ulimit -n` allows %s.\n' \
    "$clients" "$need" "$(ulimit -n)" > "$md"
  exit 0
}
taskset -pc "$server_cpus" "$rpid" > /dev/null

# run NAME CSGI_OPTIONS...: one server, one client run; writes $tmp/NAME.<i>.json.
run() {
  local name=$1 port pids i
  i=$(ls "$tmp" | grep -c "^$name\..*\.json$" || true)
  shift
  port=$(free_port)
  taskset -c "$server_cpus" setsid "$csgi" serve --app "$app" --listen "127.0.0.1:$port" "$@" > "$tmp/$name.log" 2>&1 &
  spid=$!
  wait_url "http://127.0.0.1:$port/"
  pids=$spid
  if [[ " $* " == *" --workers 2 "* ]]; then
    for _ in $(seq 100); do [ "$(pgrep -c -P "$spid")" = 2 ] && break; sleep 0.05; done
    pids="$(pgrep -P "$spid" | tr '\n' ' ')$rpid"
  fi
  echo "web_mw fan-out: $name: taskset -c $client_cpus ws_fanout_client $port $clients $messages 10 $pids"
  # shellcheck disable=SC2086
  taskset -c "$client_cpus" timeout 300 "$client" "$port" "$clients" "$messages" 10 $pids > "$tmp/$name.$i.json"
  stop_pid "$spid" || true  # common.sh is written for scripts without set -e
  spid=
}
load_before=$(cut -d' ' -f1 /proc/loadavg)
for _ in $(seq "$runs"); do
  run local
  run redis --app-arg "redis://127.0.0.1:$rport" --app-arg broadcast=redis --workers 2
done
load_after=$(cut -d' ' -f1 /proc/loadavg)

"$PY" - "$tmp" "$md" "$server_cpus" "$client_cpus" "$runs" "$load_before" "$load_after" <<'PY'
import glob, json, math, statistics, sys
tmp, dst, server_cpus, client_cpus, runs, load_before, load_after = sys.argv[1:8]
def p99(values):  # nearest rank
    v = sorted(values)
    return v[math.ceil(0.99 * len(v)) - 1]
ms = lambda us: f"{us / 1000:.1f} ms"
out = ["", "### Broadcast fan-out to WebSocket clients", "",
       "| hub | clients | messages | to the last client: median | p99 | to the first client: median | server CPU per message | client CPU per message |",
       "|---|---:|---:|---:|---:|---:|---:|---:|"]
labels = {"local": "LocalBroadcast, one process (`csgi serve`, 1 io thread)",
          "redis": "RedisBroadcast, `--workers 2` (server CPU: both workers and redis-server)"}
for name in ("local", "redis"):
    last, first, server, client, clients = [], [], 0, 0, 0
    for f in sorted(glob.glob(f"{tmp}/{name}.*.json")):
        d = json.load(open(f))
        last += d["last_us"]
        first += d["first_us"]
        server += sum(d["pid_cpu_us"].values())
        client += d["client_cpu_us"]
        clients = d["clients"]
    n = len(last)
    per_run = n // len(glob.glob(f"{tmp}/{name}.*.json"))
    out.append(f"| {labels[name]} | {clients:,} | {n} | {ms(statistics.median(last))} | {ms(p99(last))} | "
               f"{ms(statistics.median(first))} | {ms(server / n)} | {ms(client / n)} |")
out += ["", "Each message is timed from just before the client writes its `POST /publish` until the last (first) of",
        "the WebSockets has read it; the next one is published 10 ms after that. The messages of "
        f"{runs} runs of each", "server (taking turns) are pooled; p99: nearest rank. The server's processes and "
        f"redis-server run on CPU {server_cpus},", f"the client (one thread, Beast, bench/ws_fanout_client.cpp) on "
        f"CPU {client_cpus} (`taskset`). CPU per message: utime +", "stime over the publishing (the server's from "
        "/proc, in clock ticks) divided by the messages; the client's", "staying under the time to the last client "
        "means it kept up with the server. Load average of the machine:", f"{load_before} before, {load_after} after.", "",
        f"Commands: `taskset -c {server_cpus} csgi serve --app BUILD/bench/libweb_mw_app.so --listen 127.0.0.1:PORT` (local hub)",
        f"and `… --app-arg redis://127.0.0.1:PORT --app-arg broadcast=redis --workers 2`; `taskset -c {client_cpus} "
        f"ws_fanout_client PORT {clients} {per_run} 10 SERVER_PIDS` (bench/suites/lib/web_mw_fanout.sh).", ""]
open(dst, "w").write("\n".join(out))
PY
