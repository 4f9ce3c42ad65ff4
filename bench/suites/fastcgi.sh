#!/usr/bin/env bash
# FastCGI benchmark: usage `bash fastcgi.sh BUILD_DIR OUT_DIR`; writes OUT_DIR/fastcgi.md and
# bench/charts/fastcgi.png.
#   nginx (1 worker, fastcgi_keep_conn on, upstream keepalive 16) + csgi-fcgi --threads 16 serving the
#   hello app library  vs  the same nginx + the plain C libfcgi hello (bench/peers/fcgi_hello.c, 16 threads);
#   lighttpd (bin-path, 1 process) + csgi vs lighttpd + the C hello; Apache + mod_fcgid through the
#   .htaccess of docs/deploy/apache (event MPM).
# Load: `wrk -t1 -c50 -d${dur}s --latency`, nginx pairs alternated over 3 rounds (medians reported).
# BENCH_QUICK=1: 3 s runs, 1 round.
set -euo pipefail
build=$(realpath "$1")
out=$(realpath "$2")
root=$(cd "$(dirname "$0")/../.." && pwd)
charts="$root/bench/charts"
mkdir -p "$out" "$charts"
md="$out/fastcgi.md"
dur=10 rounds=3
if [ "${BENCH_QUICK:-0}" = 1 ]; then dur=3 rounds=1; fi
fcgi="$build/adapters/fastcgi/csgi-fcgi"
peer="$build/bench/peers/fcgi_hello_c"
app="$build/bench/peers/libcsgi_bench_hello.so"
for t in csgi-fcgi fcgi_hello_c csgi_bench_hello; do
  [ -e "$fcgi" ] && [ -e "$peer" ] && [ -e "$app" ] && break
  cmake --build "$build" --target "$t" -j2 >/dev/null 2>&1 || true
done
fail() { printf '## fastcgi\n\n%s\n' "$1" > "$md"; echo "fastcgi bench: $1" >&2; exit 0; }
[ -x "$fcgi" ] && [ -x "$peer" ] && [ -e "$app" ] || fail "csgi-fcgi, fcgi_hello_c or libcsgi_bench_hello.so is not built."
for c in nginx wrk lighttpd apache2; do command -v $c >/dev/null || fail "$c is not installed (scripts/install-deps.sh bench)."; done

dir=$(mktemp -d /tmp/csgi-bench-fcgi-XXXXXX)
chmod 755 "$dir"
pids=()
cleanup() {
  # TERM, then give each server up to 5 s to stop its own children (lighttpd's bin-path apps, Apache's
  # workers) before anything still there is killed.
  # Each server runs in its own process group (setsid): the group goes, children included (libfcgi's C
  # peer ignores SIGTERM while blocked in accept, so lighttpd alone cannot stop it).
  for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 50); do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
. "$(dirname "$0")/lib/common.sh"
port() { free_port; }
wait_port() { for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; return 1; }
wait_sock() { for _ in $(seq 200); do [ -S "$1" ] && return 0; sleep 0.05; done; return 1; }
user_line=""; [ "$(id -u)" = 0 ] && user_line="user root root;"

# --- the two FastCGI apps on unix sockets, started the way docs/deploy/spawn-fcgi.sh does
setsid spawn-fcgi -n -s "$dir/csgi.sock" -M 0660 -- "$fcgi" --app "$app" --threads 16 >"$dir/csgi.log" 2>&1 & pids+=($!)
setsid spawn-fcgi -n -s "$dir/c.sock" -M 0660 -- "$peer" 16 >"$dir/c.log" 2>&1 & pids+=($!)
wait_sock "$dir/csgi.sock" && wait_sock "$dir/c.sock" || fail "the FastCGI apps did not start"

p_csgi=$(port); p_c=$(port)
cat > "$dir/nginx.conf" <<NGX
daemon off; master_process on; worker_processes 1; $user_line
pid $dir/nginx.pid; error_log $dir/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/cb; fastcgi_temp_path $dir/ft; proxy_temp_path $dir/pt; uwsgi_temp_path $dir/ut; scgi_temp_path $dir/st;
  upstream csgi { server unix:$dir/csgi.sock; keepalive 16; }
  upstream cpeer { server unix:$dir/c.sock; keepalive 16; }
  server { listen 127.0.0.1:$p_csgi; location / { include /etc/nginx/fastcgi_params; fastcgi_keep_conn on; fastcgi_pass csgi; } }
  server { listen 127.0.0.1:$p_c; location / { include /etc/nginx/fastcgi_params; fastcgi_keep_conn on; fastcgi_pass cpeer; } }
}
NGX
setsid nginx -p "$dir" -c "$dir/nginx.conf" >"$dir/nginx.out" 2>&1 & pids+=($!)
wait_port "$p_csgi" || fail "nginx did not start: $(cat "$dir/nginx.out" "$dir/nginx-error.log" 2>/dev/null)"

# --- lighttpd, one config per app (bin-path spawns it, socket on fd 0)
lighty() {  # name port bin-path
  cat > "$dir/$1.conf" <<LTD
server.document-root = "$dir"
server.errorlog = "$dir/$1-error.log"
server.bind = "127.0.0.1"
server.port = $2
server.modules += ( "mod_fastcgi" )
fastcgi.server = ( "/" => (( "socket" => "$dir/$1.sock", "bin-path" => "$3", "check-local" => "disable",
                             "fix-root-scriptname" => "enable", "max-procs" => 1 )) )
LTD
  setsid lighttpd -D -f "$dir/$1.conf" >"$dir/$1.out" 2>&1 & pids+=($!)
  wait_port "$2" || fail "lighttpd ($1) did not start: $(cat "$dir/$1.out" "$dir/$1-error.log" 2>/dev/null)"
}
l_csgi=$(port); lighty lighttpd-csgi "$l_csgi" "$fcgi --app $app --threads 4"
l_c=$(port); lighty lighttpd-c "$l_c" "$peer 4"

# --- Apache + mod_fcgid through the .htaccess of docs/deploy/apache
a_port=$(port)
mkdir -p "$dir/site" "$dir/fcgid"
chmod 777 "$dir/fcgid"; [ "$(id -u)" = 0 ] && chmod 777 "$dir"
render() { sed -e "s#@FCGI@#$fcgi#g; s#@APP@#$app#g; s#--app-arg @APP_ARG@ ##g; s#@DIR@#$dir#g; s#@DOCROOT@#$dir/site#g; s#@IO_TIMEOUT@#30#g" "$1"; }
render "$root/docs/deploy/apache/htaccess-fcgid" > "$dir/site/.htaccess"
render "$root/docs/deploy/apache/app.fcgi" > "$dir/site/app.fcgi"; chmod 755 "$dir/site/app.fcgi"
mods=/usr/lib/apache2/modules
{
  echo "ServerRoot \"$dir\""; echo "DefaultRuntimeDir \"$dir\""; echo "Mutex file:$dir"; echo "PidFile $dir/httpd.pid"
  echo "Listen 127.0.0.1:$a_port"; echo "ServerName 127.0.0.1"; echo "ErrorLog $dir/apache-error.log"; echo "LogLevel warn"
  for m in mpm_event authz_core mime dir; do echo "LoadModule ${m}_module $mods/mod_$m.so"; done
  echo "TypesConfig /etc/mime.types"; echo "DocumentRoot \"$dir/site\""; echo "DirectoryIndex disabled"
  [ "$(id -u)" = 0 ] && printf 'User nobody\nGroup nogroup\n'
  render "$root/docs/deploy/apache/httpd-fcgid.conf"
} > "$dir/httpd.conf"
setsid apache2 -f "$dir/httpd.conf" -DFOREGROUND >"$dir/apache.out" 2>&1 & pids+=($!)
wait_port "$a_port" || fail "apache2 did not start: $(cat "$dir/apache.out" "$dir/apache-error.log" 2>/dev/null)"

# --- load
runwrk() {  # port → "req/s p99_ms errors"
  curl -s -o /dev/null "http://127.0.0.1:$1/" || true
  local o; o=$(wrk -t1 -c50 -d"${dur}s" --latency "http://127.0.0.1:$1/" 2>&1)
  local rps p99 err
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$o")
  p99=$(awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; print v}' <<<"$o")
  err=$(awk '/Socket errors/ {gsub(",",""); s=$4+$6+$8+$10} /Non-2xx/ {n=$5} END {print (s+0)+(n+0)}' <<<"$o")
  echo "${rps:-0} ${p99:-0} ${err:-0}"
}
declare -A R P E
for ((i = 1; i <= rounds; i++)); do
  for name in nginx-csgi nginx-c; do
    p=$p_csgi; [ $name = nginx-c ] && p=$p_c
    read -r r q e < <(runwrk "$p")
    R[$name]+="$r "; P[$name]+="$q "; E[$name]=$(( ${E[$name]:-0} + ${e%.*} ))
    echo "  $name round $i: $r req/s, p99 $q ms, errors $e"
  done
done
for name in lighttpd-csgi lighttpd-c apache-fcgid-csgi; do
  case $name in lighttpd-csgi) p=$l_csgi ;; lighttpd-c) p=$l_c ;; *) p=$a_port ;; esac
  read -r r q e < <(runwrk "$p")
  R[$name]="$r"; P[$name]="$q"; E[$name]=${e%.*}
  echo "  $name: $r req/s, p99 $q ms, errors $e"
done
med() { tr ' ' '\n' <<<"$1" | grep -v '^$' | median; }
rc=$(med "${R[nginx-csgi]}"); rp=$(med "${R[nginx-c]}")
qc=$(med "${P[nginx-csgi]}"); qp=$(med "${P[nginx-c]}")
ratio=$(awk -v a="$rc" -v b="$rp" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
lratio=$(awk -v a="${R[lighttpd-csgi]}" -v b="${R[lighttpd-c]}" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
{
  echo "## fastcgi"
  echo
  echo "csgi's FastCGI adapter (csgi-fcgi, libfcgi) behind real front servers, against the same front server"
  echo "with a plain C libfcgi hello (bench/peers/fcgi_hello.c): same thread count, same keep-alive settings."
  echo "Target: nginx + csgi ≥ 0.95 × nginx + C. wrk -t1 -c50, ${dur} s runs; nginx rows are medians of $rounds"
  echo "alternating rounds. 2-core machine, wrk, nginx and the app share it; other engineers were compiling."
  echo
  echo "| front server + app | threads | keep-alive to app | req/s | p99 latency | errors | csgi / peer |"
  echo "|---|---|---|---|---|---|---|"
  echo "| nginx + csgi-fcgi hello | 16 | fastcgi_keep_conn, keepalive 16 | $rc | ${qc} ms | ${E[nginx-csgi]} | **$ratio** |"
  echo "| nginx + C libfcgi hello | 16 | fastcgi_keep_conn, keepalive 16 | $rp | ${qp} ms | ${E[nginx-c]} | |"
  echo "| lighttpd + csgi-fcgi hello | 4 | lighttpd's (1 process, bin-path) | ${R[lighttpd-csgi]} | ${P[lighttpd-csgi]} ms | ${E[lighttpd-csgi]} | $lratio |"
  echo "| lighttpd + C libfcgi hello | 4 | lighttpd's (1 process, bin-path) | ${R[lighttpd-c]} | ${P[lighttpd-c]} ms | ${E[lighttpd-c]} | |"
  echo "| Apache event + mod_fcgid (.htaccess) + csgi-fcgi | 2 per process, ≤4 processes | mod_fcgid's | ${R[apache-fcgid-csgi]} | ${P[apache-fcgid-csgi]} ms | ${E[apache-fcgid-csgi]} | |"
  echo
  echo "![FastCGI req/s](charts/fastcgi.png)"
  echo
  echo "Commands: \`spawn-fcgi -n -s SOCK -M 0660 -- csgi-fcgi --app libcsgi_bench_hello.so --threads 16\`,"
  echo "\`spawn-fcgi -n -s SOCK -M 0660 -- fcgi_hello_c 16\`, nginx 1 worker with \`fastcgi_keep_conn on\` and"
  echo "\`keepalive 16\`; lighttpd \`bin-path\` (\`max-procs 1\`, 4 threads); Apache with docs/deploy/apache/"
  echo "(htaccess-fcgid, httpd-fcgid.conf, app.fcgi); load \`wrk -t1 -c50 -d${dur}s --latency http://127.0.0.1:PORT/\`."
} > "$md"
/usr/bin/python3 - "$charts/fastcgi.png" "$rc" "$rp" "${R[lighttpd-csgi]}" "${R[lighttpd-c]}" "${R[apache-fcgid-csgi]}" <<'PY' || true
import sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
out, *v = sys.argv[1:]
v = [float(x or 0) for x in v]
names = ["nginx+csgi", "nginx+C", "lighttpd+csgi", "lighttpd+C", "apache+fcgid+csgi"]
colors = ["#3465a4", "#888a85", "#3465a4", "#888a85", "#3465a4"]
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.bar(names, v, color=colors)
ax.set_ylabel("req/s (wrk -t1 -c50)")
ax.set_title("FastCGI hello: csgi-fcgi vs plain C libfcgi")
for i, x in enumerate(v):
    ax.text(i, x, f"{x:,.0f}", ha="center", va="bottom", fontsize=8)
fig.tight_layout()
fig.savefig(out, dpi=110)
PY
cat "$md"
