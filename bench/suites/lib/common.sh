# Shell functions the bench suites share; a suite sources this file after setting `md` (its section file):
#   . "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3

# A free TCP port on 127.0.0.1 below 32768, outside the kernel's ephemeral range that clients draw from.
free_port() {
  "$PY" -c '
import random, socket
for _ in range(500):
    port = random.randint(20000, 32767)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break'
}

# fail_section MESSAGE: the suite's section says why it could not run, and the suite ends (status 0, so
# that the other suites still run).
fail_section() {
  local name
  name=$(basename "$md" .md)
  printf '## %s\n\n%s\n' "$name" "$1" > "$md"
  echo "$name bench: $1" >&2
  exit 0
}

# stop_pid PID: TERM to its process group when it leads one (servers started with setsid), else to it;
# KILL after 5 s.
stop_pid() {
  local p=$1
  kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
  wait "$p" 2>/dev/null
  return 0
}

# wait_url URL [TRIES]: true once URL answers (any status; certificates not checked), polling every 50 ms.
wait_url() {
  local tries=${2:-200}
  for _ in $(seq "$tries"); do
    curl -sk -o /dev/null --max-time 2 "$1" && return 0
    sleep 0.05
  done
  echo "no answer from $1" >&2
  return 1
}

# cpu_ticks PID: utime+stime of the process (clock ticks); tree_cpu_ticks PID adds its children's.
# Fields counted after the command name, which may hold spaces ("starman worker" sets its own).
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13} END {if (!NR) print 0}'; }
tree_cpu_ticks() {
  local total=0 p
  for p in "$1" $(pgrep -P "$1" || true); do total=$((total + $(cpu_ticks "$p"))); done
  echo "$total"
}

# median: the median of the numbers on stdin, one per line (the mean of the middle two for an even count).
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# ctx_switches PID: voluntary + nonvoluntary context switches summed over the process's live threads
# (/proc/PID/task/*/status); tree_ctx_switches PID adds its children's.
ctx_switches() {
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^(non)?voluntary_ctxt_switches:/ {s += $2} END {print s + 0}'
}
tree_ctx_switches() {
  local total=0 p
  for p in "$1" $(pgrep -P "$1" || true); do total=$((total + $(ctx_switches "$p"))); done
  echo "$total"
}

# ticks_us TICKS: clock ticks (as cpu_ticks counts them) in µs.
ticks_us() { echo $(( $1 * 1000000 / $(getconf CLK_TCK) )); }

# per_request TOTAL REQUESTS: TOTAL / REQUESTS with one decimal ("-" when no request was counted).
per_request() { awk -v t="$1" -v n="$2" 'BEGIN {if (n > 0) printf "%.1f\n", t / n; else print "-"}'; }
