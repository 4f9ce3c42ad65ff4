#!/usr/bin/env bash
# Bench suite "web_mw": per-request cost of sessions (cookie, memory and Redis stores), csrf, cors and
# rate_limit (memory and Redis), in-process (bench/web_mw_bench.cpp, Google Benchmark), on one core
# (taskset -c 0); a redis-server of its own runs on core 1 (a temporary config, a free port of
# 127.0.0.1), so the Redis rows count this thread's CPU and show the round trip's wall time. Also the
# in-process broadcast hub's fan-out of one message to 1,000 subscribers. Then, with that redis-server, on
# the server: the instructions each middleware adds per request and the Redis round trips of the Redis-backed
# ones (lib/web_mw_instructions.sh, callgrind), and broadcast fan-out to 1,000 real WebSocket clients with
# the local hub and with Redis and --workers 2 (lib/web_mw_fanout.sh). Called by scripts/bench.sh as
# `bash web_mw.sh BUILD_DIR OUT_DIR`; writes OUT_DIR/web_mw.md and the raw JSON OUT_DIR/web_mw.json.
# BENCH_QUICK=1: shorter runs.
set -euo pipefail
build=$(realpath "${1:-build}")
out=$(realpath "${2:-bench/out}")
mkdir -p "$out"
bin="$build/bench/web_mw_bench"
[ -x "$bin" ] || cmake --build "$build" --target web_mw_bench -j"$(nproc)"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
  min_time=0.05 reps=3 server_requests=1000 fanout_messages=30 fanout_runs=1
else
  min_time=0.3 reps=5 server_requests=5000 fanout_messages=100 fanout_runs=3
fi
tmp=$(mktemp -d)
redis_pid=
cleanup() { [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
if [ -x /usr/bin/redis-server ]; then
  port=$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import ports; print(ports.free_port())' \
         "$(dirname "$0")/../../tests")
  printf 'port %s\nbind 127.0.0.1\nsave ""\nappendonly no\ndir %s\nlogfile ""\n' "$port" "$tmp" > "$tmp/redis.conf"
  taskset -c 1 /usr/bin/redis-server "$tmp/redis.conf" > /dev/null &
  redis_pid=$!
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.05; done
  export CSGI_BENCH_REDIS="redis://127.0.0.1:$port"
  redis_port=$port
fi
cmd=(taskset -c 0 "$bin" --benchmark_min_time="$min_time" --benchmark_repetitions="$reps"
     --benchmark_report_aggregates_only=true --benchmark_format=json --benchmark_out="$out/web_mw.json"
     --benchmark_out_format=json)
echo "${cmd[*]}"
"${cmd[@]}" > /dev/null

shown="${cmd[*]}"
shown=${shown//$build/BUILD}
/usr/bin/python3 - "$out/web_mw.json" "$out/web_mw.md" "${shown//$out/OUT}" <<'PY'
import json, sys
src, dst, command = sys.argv[1:4]
data = json.load(open(src))
cpu, real = {}, {}
for b in data["benchmarks"]:
    if b.get("run_type") == "aggregate" and b["aggregate_name"] == "median":
        scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        name = b["run_name"].split("/")[0]
        cpu[name], real[name] = b["cpu_time"] * scale, b["real_time"] * scale
labels = {
    "BM_Bare": "hello, no middleware (env build + call + drain)",
    "BM_SessionsNone": "sessions, no cookie (an empty session, nothing stored)",
    "BM_SessionsCookieSigned": "sessions, signed cookie store (HMAC-SHA256 verified)",
    "BM_SessionsCookieEncrypted": "sessions, encrypted cookie store (AES-256-GCM)",
    "BM_SessionsMemory": "sessions, memory store",
    "BM_SessionsRedis": "sessions, Redis store (one GET)",
    "BM_CsrfPost": "sessions (memory) + csrf, POST with a masked token",
    "BM_CorsSimple": "cors, an allowed origin with credentials",
    "BM_RateLimitMemory": "rate_limit, memory bucket by address",
    "BM_RateLimitRedis": "rate_limit, Redis bucket (one EVALSHA)",
}
bare = cpu.get("BM_Bare")
def fmt(ns):
    return f"{ns/1e6:.2f} ms" if ns >= 1e6 else f"{ns/1e3:.1f} µs" if ns >= 1e4 else f"{ns/1e3:.2f} µs"
lines = ["## Sessions, CSRF, CORS, rate limit, broadcast (per request, one core)", "",
         "| case | CPU µs per request | added to bare hello | wall per request | req/s one core (CPU bound) |",
         "|---|---:|---:|---:|---:|"]
for name, label in labels.items():
    if name not in cpu:
        continue
    t = cpu[name]
    add = "—" if name == "BM_Bare" or bare is None else "+" + fmt(max(t - bare, 0))
    lines.append(f"| {label} | {fmt(t)} | {add} | {fmt(real[name])} | {1e9/t:,.0f} |")
if "BM_BroadcastFanout" in real:
    lines += ["", "| broadcast | time to deliver one message to all |", "|---|---:|",
              f"| in-process hub, 1,000 subscribers (2 delivery threads) | {fmt(real['BM_BroadcastFanout'])} |"]
lines += ["", "Medians of the repetitions, CPU time of the benchmark thread on core 0 (`taskset -c 0`); the Redis rows'",
          "redis-server runs on core 1 and its CPU is not counted (their wall time includes the loopback round trip).",
          "Fan-out: wall time from publish() until the last subscriber's callback ran (no sockets).",
          "Command: `" + command + "`", ""]
open(dst, "w").write("\n".join(lines))
PY

# On the server: the app library and the client are not in the default build.
if [ -n "${redis_port:-}" ]; then
  cmake --build "$build" --target web_mw_app ws_fanout_client -j"$(nproc)" > /dev/null
  lib="$(dirname "$0")/lib"
  bash "$lib/web_mw_instructions.sh" "$build" "$tmp/instructions.md" "$redis_port" "$server_requests"
  bash "$lib/web_mw_fanout.sh" "$build" "$tmp/fanout.md" "$redis_port" "$redis_pid" 1000 "$fanout_messages" "$fanout_runs"
  cat "$tmp/instructions.md" "$tmp/fanout.md" >> "$out/web_mw.md"
else
  printf '%s\n' "" "No redis-server: the server-side rows (instructions, Redis round trips, WebSocket fan-out) were not measured." >> "$out/web_mw.md"
fi
cat "$out/web_mw.md"
