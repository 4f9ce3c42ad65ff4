#!/usr/bin/env bash
# Rack host benchmark: `bash ruby.sh BUILD_DIR OUT_DIR` writes OUT_DIR/ruby.md.
#   1. a Rack hello (a lambda, an Array body)
#   2. a Sinatra route (`get "/hello/:name"`, production)
#   3. a Rails 6.1 page (tests/bindings/ruby/rails.ru's `/`: the router, a controller, the cookie session
#      and CSRF middleware; production)
# each under `csgi serve --rack` (one io thread) and under Puma in single mode (`-w 0`, Puma's default
# threads), both servers pinned to cpu0 and up together, `wrk -t1 -c16` pinned to cpu1, the servers'
# runs alternated; then the hello and the Rails page with two workers each (`--workers 2` against Puma's
# cluster mode `-w 2`) on the whole machine, wrk beside them. Besides req/s: the server's CPU time per request (utime+stime of its process from
# /proc over the wrk run / requests), the figure that holds on a machine shared with other work, and its
# context switches per request (voluntary + involuntary, all its threads and worker processes): what the
# handoffs between threads cost beside the app's own work.
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath "${2:-bench/out}")
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
md="$out/ruby.md"
. "$(dirname "$0")/lib/common.sh"
dur=10; [ "${BENCH_QUICK:-0}" = 1 ] && dur=3
reps=${BENCH_REPS:-3}  # wrk runs per server and app; medians are reported
csgi="$build/adapters/cli/csgi"
[ -x "$csgi" ] || fail_section "the csgi command is not built (target csgi_cli)."
[[ "$("$csgi" serve --help 2>&1)" == *--rack* ]] || fail_section "csgi was built without --rack (ruby-dev missing)."
command -v wrk >/dev/null || fail_section "wrk not found (scripts/install-deps.sh bench)."
command -v puma >/dev/null || fail_section "puma not found (scripts/install-deps.sh test)."
ruby -e 'require "sinatra/base"' 2>/dev/null || fail_section "Sinatra not found (ruby-sinatra)."
pin() { if command -v taskset >/dev/null; then taskset -c "$1" "${@:2}"; else "${@:2}"; fi; }
tck=$(getconf CLK_TCK)
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do stop_pid "$p"; done; rm -rf "$work"' EXIT

cat > "$work/hello.ru" <<'EOF'
run ->(env) { [200, { "Content-Type" => "text/plain" }, ["Hello, World!"]] }
EOF
cat > "$work/sinatra.ru" <<'EOF'
require "sinatra/base"
class Bench < Sinatra::Base
  set :environment, :production
  get("/hello/:name") { "Hello, #{params[:name]}!" }
end
run Bench
EOF

# start NAME CMD...: a server in its own process group on $server_cpus; sets PORT[NAME] and PID[NAME]
declare -A PORT PID
server_cpus=0 load_cpus=1
start() {
  local name=$1 port
  port=$(free_port)
  shift
  local argv=("${@//PORT/$port}")
  RACK_ENV=production setsid taskset -c "$server_cpus" "${argv[@]}" > "$work/$name.log" 2>&1 &
  PID[$name]=$!
  pids+=("$!")
  PORT[$name]=$port
  wait_url "http://127.0.0.1:$port/" 600 || fail_section "$name did not start: $(tail -3 "$work/$name.log")"
}

# run NAME PATH: one wrk run; appends "req/s cpu_us_per_request switches_per_request" to $work/NAME.rows
run() {
  local name=$1 path=$2 t0 t1 s0 s1 reqs rps
  t0=$(tree_cpu_ticks "${PID[$name]}")
  s0=$(tree_ctx_switches "${PID[$name]}")
  pin "$load_cpus" timeout $((dur + 30)) wrk -t1 -c16 -d"${dur}s" "http://127.0.0.1:${PORT[$name]}$path" > "$work/wrk.out" 2>&1
  t1=$(tree_cpu_ticks "${PID[$name]}")
  s1=$(tree_ctx_switches "${PID[$name]}")
  reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
  [ -n "$reqs" ] && [ "$reqs" -gt 0 ] || { echo "ruby bench: wrk failed for $name" >&2; cat "$work/wrk.out" >&2; return 1; }
  echo "$rps $(awk -v d=$((t1 - t0)) -v n="$reqs" -v hz="$tck" -v s=$((s1 - s0)) 'BEGIN {
    printf "%.1f %.1f", d * 1e6 / hz / n, s / n }')" >> "$work/$name.rows"
}

cp "$root/tests/bindings/ruby/rails.ru" "$work/rails.ru"
label() { case $1 in hello) echo "Rack hello" ;; sinatra) echo "Sinatra route" ;; rails) echo "Rails page" ;; esac; }
path_of() { case $1 in sinatra) echo /hello/world ;; *) echo / ;; esac; }

# compare APP TAG CSGI_ARGS PUMA_ARGS: both servers up, runs alternated; appends a row to rows
compare() {
  local app=$1 tag=$2 path c p
  path=$(path_of "$app")
  c="csgi-$app$tag" p="puma-$app$tag"
  start "$c" "$csgi" serve --rack "$work/$app.ru" --listen 127.0.0.1:PORT --threads 1 $3
  start "$p" puma $4 -e production -b tcp://127.0.0.1:PORT "$work/$app.ru"
  for n in "$c" "$p"; do curl -s -o /dev/null "http://127.0.0.1:${PORT[$n]}$path"; done
  for _ in $(seq "$reps"); do
    run "$c" "$path" || fail_section "wrk failed against csgi serve --rack ($app$tag)."
    run "$p" "$path" || fail_section "wrk failed against Puma ($app$tag)."
  done
  for n in "$c" "$p"; do stop_pid "${PID[$n]}"; done
  c_rps=$(cut -d' ' -f1 "$work/$c.rows" | median)
  p_rps=$(cut -d' ' -f1 "$work/$p.rows" | median)
  c_cpu=$(cut -d' ' -f2 "$work/$c.rows" | median)
  p_cpu=$(cut -d' ' -f2 "$work/$p.rows" | median)
  c_sw=$(cut -d' ' -f3 "$work/$c.rows" | median)
  p_sw=$(cut -d' ' -f3 "$work/$p.rows" | median)
  rows+=("$(awk -v a="$(label "$app")$5" -v cr="$c_rps" -v pr="$p_rps" -v cc="$c_cpu" -v pc="$p_cpu" \
    -v cs="$c_sw" -v ps="$p_sw" 'BEGIN {
    printf "| %s | %.0f | %.0f | %.2f× | %.1f | %.1f | %.2f× | %.1f | %.1f |", a, cr, pr, cr / pr, cc, pc, pc / cc, cs, ps }')")
}

rows=()
for app in hello sinatra rails; do compare "$app" "" "" "-w 0" ""; done
server_cpus=0,1 load_cpus=0,1
for app in hello rails; do compare "$app" "-w2" "--workers 2" "-w 2" ", 2 workers (whole machine)"; done

puma_v=$(puma --version 2>/dev/null | head -1)
{
  echo "## ruby"
  echo
  echo "Rack apps: \`csgi serve --rack\` (one io thread; the app on the process's Ruby VM thread) vs Puma"
  echo "single mode (\`-w 0\`, its default threads), each server pinned to cpu0, \`wrk -t1 -c16 -d${dur}s\` pinned"
  echo "to cpu1, runs alternated, median of $reps; the \"2 workers\" rows: \`--workers 2\` against Puma's cluster"
  echo "mode (\`-w 2\`), servers and wrk on both CPUs. CPU µs/request: the server's utime+stime over the run /"
  echo "requests; the machine is shared, so this column, not req/s, is the one to compare. Ratios: csgi over"
  echo "Puma for req/s, Puma over csgi for CPU (above 1 = csgi better). Switches/req: the server's context"
  echo "switches per request (all its threads and workers, voluntary and involuntary)."
  echo
  echo "| app | csgi req/s | Puma req/s | ratio | csgi CPU µs/req | Puma CPU µs/req | ratio | csgi switches/req | Puma switches/req |"
  echo "|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Ruby $(ruby -e 'print RUBY_VERSION'), Rack $(ruby -e 'require "rack"; print Rack.release'), $puma_v."
  echo "Commands: \`taskset -c 0 csgi serve --rack APP.ru --listen 127.0.0.1:PORT --threads 1\`;"
  echo "\`taskset -c 0 puma -w 0 -e production -b tcp://127.0.0.1:PORT APP.ru\`;"
  echo "\`taskset -c 1 wrk -t1 -c16 -d${dur}s http://127.0.0.1:PORT/PATH\` (APP.ru written by bench/suites/ruby.sh)."
} > "$md"
cat "$md"
