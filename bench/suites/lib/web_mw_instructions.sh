#!/usr/bin/env bash
# Part of the web_mw suite (bench/suites/web_mw.sh): user-space instructions per request that each
# middleware adds on the server, and the Redis commands per request of the Redis-backed ones.
#   bash web_mw_instructions.sh BUILD_DIR OUT_MD REDIS_PORT REQUESTS
# Each case of bench/web_mw_app.cpp is served by `csgi serve --app libweb_mw_app.so --app-arg case=NAME`
# (one io thread, the app inline) under valgrind's callgrind, and so is the bare hello, with the same
# client command (`ab -k -c 1`: one request at a time, so each takes the same path through the event loop
# and the count repeats to the instruction). After 200 requests of warm-up, callgrind dumps its counters
# (callgrind_control -d), REQUESTS requests follow, and a second dump holds what they executed: no start-up
# nor shutdown in the figure. Session cases first log in (GET /login: the cookie, and the CSRF token) and
# send that cookie; the bare app gets the same bytes. Redis round trips: the commands redis-server's
# MONITOR shows from the server's connections during the REQUESTS requests (RedisClient sends one command
# and waits for its reply), apart from those a Lua script ran inside Redis.
set -euo pipefail
build=$1 md=$2 rport=$3 n=$4
. "$(dirname "$0")/common.sh"
csgi="$build/adapters/cli/csgi"
app="$build/bench/libweb_mw_app.so"
for tool in valgrind callgrind_control ab curl redis-cli; do
  command -v "$tool" >/dev/null || { printf '%s not found: no instruction counts\n' "$tool" > "$md"; exit 0; }
done
tmp=$(mktemp -d)
spid= mpid=
cleanup() {
  [ -n "$spid" ] && kill -9 "$spid" 2>/dev/null
  [ -n "$mpid" ] && kill "$mpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# monitor_start / monitor_stop: redis-server's MONITOR into $tmp/monitor while the measured requests run;
# monitor_stop waits (at most 5 s) until no more lines come.
monitor_start() {
  redis-cli -p "$rport" MONITOR > "$tmp/monitor" &
  mpid=$!
  for _ in $(seq 100); do grep -q '^OK' "$tmp/monitor" && return 0; sleep 0.05; done
  echo "web_mw: MONITOR did not start" >&2
  return 1
}
monitor_stop() {
  local lines=-1
  for _ in $(seq 25); do
    [ "$(wc -l < "$tmp/monitor")" = "$lines" ] && break
    lines=$(wc -l < "$tmp/monitor")
    sleep 0.2
  done
  kill "$mpid" 2>/dev/null
  wait "$mpid" 2>/dev/null || true
  mpid=
}

# dump_wait FILE: waits (at most 10 s) until callgrind has written FILE.
dump_wait() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "no callgrind dump $1" >&2; return 1; }

# count CASE: serves CASE under callgrind and runs `ab "${ab_args[@]}"` against it; sets instr (per
# request) and, for a Redis case, redis ("1.00 (GET)": the round trips per request, the commands they
# sent, and those a script of theirs ran). With $login set (session, csrf) it logs
# in first and adds the cookie (and the token) to ab_args, for the bare run that follows.
count() {
  local case=$1 port url out redis_arg=()
  port=$(free_port)
  url="http://127.0.0.1:$port"
  out="$tmp/cg.$case.$RANDOM"
  [[ "$case" == *_redis ]] && redis_arg=(--app-arg "redis://127.0.0.1:$rport")
  valgrind --tool=callgrind --callgrind-out-file="$out" "$csgi" serve --app "$app" --app-arg "case=$case" \
    "${redis_arg[@]}" --listen "127.0.0.1:$port" --idle-timeout 600 > "$tmp/server.log" 2>&1 &
  spid=$!
  wait_url "$url/" 300
  if [ -n "${login:-}" ]; then
    local token cookie
    token=$(curl -s -c "$tmp/jar" "$url/login")
    cookie=$(awk '$6 == "csgi_session" {print $6 "=" $7}' "$tmp/jar")
    [ -n "$cookie" ] || { echo "web_mw: $case gave no session cookie" >&2; return 1; }
    ab_args+=(-C "$cookie")
    [ "$login" = csrf ] && ab_args+=(-H "X-CSRF-Token: $token")
    [ "$(curl -s -b "$cookie" "$url/")" = "Hello, ann!" ] || { echo "web_mw: $case: the session did not load" >&2; return 1; }
    login=
  fi
  ab "${ab_args[@]}" -n 200 "$url/" > /dev/null 2>&1
  callgrind_control -d "$spid" > /dev/null
  dump_wait "$out.1"
  [ -n "${redis_arg[*]}" ] && monitor_start
  ab "${ab_args[@]}" -n "$n" "$url/" > "$tmp/ab.txt" 2>&1
  callgrind_control -d "$spid" > /dev/null
  dump_wait "$out.2"
  redis=
  if [ -n "${redis_arg[*]}" ]; then
    monitor_stop
    # A command a client sent: [db 127.0.0.1:port] "GET" ...; one a Lua script ran: [db lua] "TIME" ...
    redis=$(awk -v n="$n" '
      $2 ~ /^\[/ { cmd = toupper($4); gsub(/"/, "", cmd)
                    if ($3 == "lua]") { if (!(cmd in inner)) order[++k] = cmd; inner[cmd] = 1 }
                    else if (cmd != "INFO") { trips++; sent[cmd]++ } }
      END { printf "%.2f (", trips / n; sep = ""
            for (c in sent) { printf "%s%s", sep, c; sep = ", " }
            if (k) { printf "; the script runs"; for (i = 1; i <= k; i++) printf " %s%s", order[i], i < k ? "," : "" }
            printf ")" }' "$tmp/monitor")
  fi
  kill -TERM "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null || true
  spid=
  if ! grep -q "^Complete requests: *$n$" "$tmp/ab.txt" || ! grep -q "^Failed requests: *0$" "$tmp/ab.txt" ||
     grep -q "^Non-2xx" "$tmp/ab.txt"; then
    echo "web_mw: $case: not every request answered 2xx:" >&2
    grep -E "^(Complete|Failed|Non-2xx)" "$tmp/ab.txt" >&2
    return 1
  fi
  instr=$(awk -v n="$n" '/^summary:/ {printf "%.0f", $2 / n}' "$out.2")
  echo "web_mw: $case: $instr instructions per request${redis:+, Redis round trips per request: $redis}"
}

# measure ROW CASE LOGIN AB_ARGS...: CASE, then the bare hello with the same requests; appends
# "ROW<TAB>instructions<TAB>bare's instructions<TAB>redis commands" to $tmp/rows.tsv.
measure() {
  local row=$1 case=$2 case_instr case_redis
  login=$3
  shift 3
  ab_args=(-k -c 1 "$@")
  count "$case"
  case_instr=$instr case_redis=$redis
  count bare
  printf '%s\t%s\t%s\t%s\n' "$row" "$case_instr" "$instr" "$case_redis" >> "$tmp/rows.tsv"
}
origin=(-H "Origin: https://app.example")
printf 'x=1' > "$tmp/form"
: > "$tmp/rows.tsv"
measure cors_preflight cors "" "${origin[@]}" -m OPTIONS -H "Access-Control-Request-Method: POST" \
  -H "Access-Control-Request-Headers: X-CSRF-Token"
measure cors_simple cors "" "${origin[@]}"
measure sessions_cookie sessions_cookie session
measure sessions_cookie_encrypted sessions_cookie_encrypted session
measure sessions_memory sessions_memory session
measure sessions_redis sessions_redis session
measure csrf csrf csrf -p "$tmp/form" -T application/x-www-form-urlencoded
measure rate_limit_memory rate_limit_memory ""
measure rate_limit_redis rate_limit_redis ""

"$PY" - "$tmp/rows.tsv" "$md" "$n" <<'PY'
import sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
labels = {"cors_preflight": "cors, a preflight (OPTIONS, allowed origin, method and header; answered by the middleware)",
          "cors_simple": "cors, a GET from an allowed origin with credentials",
          "sessions_cookie": "sessions, signed cookie store (HMAC-SHA256), a logged-in cookie",
          "sessions_cookie_encrypted": "sessions, encrypted cookie store (AES-256-GCM), a logged-in cookie",
          "sessions_memory": "sessions, memory store, a logged-in cookie",
          "sessions_redis": "sessions, Redis store, a logged-in cookie",
          "csrf": "sessions (memory) + csrf, a POST with the masked token in X-CSRF-Token",
          "rate_limit_memory": "rate_limit, memory bucket by client address",
          "rate_limit_redis": "rate_limit, Redis bucket by client address"}
out = ["", "### Instructions per request on the server, and Redis round trips", "",
       "| case | instructions per request | bare hello, same requests | added by the middleware | Redis round trips per request |",
       "|---|---:|---:|---:|---|"]
for line in open(src).read().splitlines():
    row, instr, bare, redis = (line.split("\t") + [""])[:4]
    instr, bare, label = int(instr), int(bare), labels[row]
    out.append(f"| {label} | {instr:,} | {bare:,} | {instr - bare:+,} | {redis or '—'} |")
out += ["", "User-space instructions per request of the whole server process (`csgi serve --app libweb_mw_app.so",
        "--app-arg case=NAME`, one io thread, the app inline), counted by valgrind's callgrind over "
        f"{n:,} keep-alive", "requests (`ab -k -c 1`) after 200 of warm-up (`callgrind_control -d` before and "
        "after: no start-up in", "the figure); the bare hello served the same requests (the same cookie, headers "
        "and body; for the", "preflight, the hello answering the OPTIONS). Kernel work is not counted. The csrf "
        "row includes the memory", "session store (csrf needs a session): csrf alone is that row minus the "
        "memory-store row. Redis round", "trips: the commands the server sent, from redis-server's `MONITOR` over "
        "the same requests (RedisClient", "sends one and waits for its reply); the Lua script's own commands run "
        "inside Redis. `perf stat -e", "instructions` was not used: the machine's virtual CPUs expose no hardware "
        "counters.", "", "Commands: `valgrind --tool=callgrind csgi serve --app BUILD/bench/libweb_mw_app.so --app-arg case=NAME "
        "[--app-arg redis://127.0.0.1:PORT] --listen 127.0.0.1:PORT`, "
        f"`ab -k -c 1 -n {n} [-C csgi_session=…] [-H …] [-m OPTIONS | -p form]` (bench/suites/lib/web_mw_instructions.sh).", ""]
open(dst, "w").write("\n".join(out))
PY
