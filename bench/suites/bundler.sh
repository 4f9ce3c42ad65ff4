#!/usr/bin/env bash
# Bundler benchmark: usage `bash bundler.sh BUILD_DIR OUT_DIR`; writes OUT_DIR/bundler.md and
# bench/charts/bundler.png.
#  1. The cached bundle of ramda's whole closure served by the bundler (csgi-bundle-serve: standalone
#     adapter, 1 io thread) vs nginx (1 worker, sendfile) serving the same bytes as one static file,
#     `wrk -t1 -c50`, server pinned to cpu0 and wrk to cpu1 when taskset exists.
#  2. Cold build of that bundle (new process, empty caches) vs `esbuild --bundle` of the same entry:
#     wall and CPU time, medians of 5; output bytes of both.
#  3. The per-request cost of a cache hit under each freshness mode (in-process, csgi-bundle --time).
#  4. Cold builds of five large entries of the npm corpus (tests/middleware/bundler/corpus_cases: three,
#     date-fns, lodash-es, vue, react + react-dom) vs `esbuild --bundle --platform=browser`: wall and CPU.
#  5. The react + react-dom bundle served cached, brotli and gzip, vs nginx serving the same compressed
#     bytes from files (gzip_static for gzip; a .br file with Content-Encoding for brotli).
#  6. Bytes on the wire for the five entries, per mode (development, production): the bundler's brotli
#     answer (`--mode M`) vs esbuild's output (not minified, `--define:process.env.NODE_ENV="M"`) under
#     brotli at the same quality (5, the bundler's default; Node's zlib).
# Pinned npm packages go to a cache dir: $CSGI_BENCH_CACHE (default BUILD_DIR/bench-cache)/bundler.
#  7. The per-module transform cache on tests/middleware/bundler/tsx_app: esbuild transforms and cache hits
#     of a cold request and of warm ones after touching every source, editing one .tsx and undoing it.
# BENCH_QUICK=1: 3 s wrk runs and 3 timing repeats. BUNDLER_BENCH_PART=bytes: part 6 alone;
# BUNDLER_BENCH_PART=transforms: part 7 alone.
set -euo pipefail
build=$(realpath "$1")
out=$(realpath "$2")
here=$(cd "$(dirname "$0")/../.." && pwd)
charts="$here/bench/charts"
mkdir -p "$out" "$charts"
tool="$build/middleware/bundler/csgi-bundle"
serve="$build/middleware/bundler/csgi-bundle-serve"
cache="${CSGI_BENCH_CACHE:-$build/bench-cache}/bundler"
dur=6
reps=5
if [ "${BENCH_QUICK:-0}" = 1 ]; then dur=3; reps=3; fi
RAMDA=ramda@0.31.3
ESBUILD=esbuild@0.24.2
CORPUS="three@0.187.0 date-fns@4.4.0 lodash-es@4.18.1 vue@3.5.45 react@18.3.1 react-dom@18.3.1"
ENTRIES="three date-fns lodash-es vue react"
PY=/usr/bin/python3
md="$out/bundler.md"

. "$(dirname "$0")/lib/common.sh"
[ -x "$tool" ] || cmake --build "$build" --target csgi-bundle -j2 >/dev/null
[ -x "$serve" ] || cmake --build "$build" --target csgi-bundle-serve -j2 >/dev/null || true
[ -x "$tool" ] || fail_section "csgi-bundle is not built (cmake --build BUILD --target csgi-bundle)."
command -v npm >/dev/null || fail_section "npm not found: the corpus (ramda) and esbuild come from the npm registry."

mkdir -p "$cache"
if [ ! -f "$cache/node_modules/ramda/package.json" ] || [ ! -x "$cache/node_modules/.bin/esbuild" ] ||
   ! grep -q '"version": "0.31.3"' "$cache/node_modules/ramda/package.json" ||
   ! grep -q '"version": "0.187.0"' "$cache/node_modules/three/package.json" 2>/dev/null; then
  # shellcheck disable=SC2086
  npm install --prefix "$cache" --no-audit --no-fund --no-save --loglevel=error "$RAMDA" "$ESBUILD" $CORPUS >/dev/null
fi
rm -rf "$cache/corpus_cases"
cp -r "$here/tests/middleware/bundler/corpus_cases" "$cache/corpus_cases"
root="$cache"
entry=/~/ramda
tmp=$(mktemp -d /tmp/csgi-bench-bundler-XXXXXX)
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
brotli5() { node -e 'const z=require("zlib"),fs=require("fs");
  process.stdout.write(String(z.brotliCompressSync(fs.readFileSync(process.argv[1]),
    {params:{[z.constants.BROTLI_PARAM_QUALITY]:5}}).length))' "$1"; }
# --- 7. the per-module transform cache, cold and warm ---
transform_rows=$("$PY" "$here/bench/suites/bundler_transform_cache.py" "$tool" "$here/tests/middleware/bundler/tsx_app" \
                 "$root/node_modules" "$root/node_modules/.bin/esbuild") || transform_rows=""
transform_md() {
  [ -n "$transform_rows" ] || return 0
  echo "The per-module transform cache (esbuild's output for each TypeScript/JSX module, keyed by content and"
  echo "options) on tests/middleware/bundler/tsx_app: one \`csgi-bundle --freshness stat --stdio\` process asks"
  echo "for \`/src/main.tsx\` after each step; its \`~stats\` line counts the esbuild runs (misses) and the"
  echo "cache's answers (hits) the request caused (bench/suites/bundler_transform_cache.py)."
  echo
  echo "| step | esbuild transforms | cache hits | hit rate | request |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "$transform_rows"
}
# BUNDLER_BENCH_PART: the section its function writes, alone.
part_alone() {
  { echo "## bundler"; echo; "$1"; } > "$md"
  rm -rf "$tmp"
  cat "$md"
  exit 0
}
[ "${BUNDLER_BENCH_PART:-}" = transforms ] && part_alone transform_md
# --- 6. bytes on the wire under brotli, per mode ---
wire_rows=""
for mode in development production; do
  for e in $ENTRIES; do
    plain=$("$tool" --mode "$mode" --freshness none "$root" "/corpus_cases/$e.js" 2>/dev/null | wc -c)
    br=$("$tool" --mode "$mode" --freshness none --accept-encoding br "$root" "/corpus_cases/$e.js" 2>/dev/null | wc -c)
    mods=$("$tool" --mode "$mode" --freshness none "$root" "/corpus_cases/$e.js" 2>&1 >/dev/null | awk '/X-Bundle-Modules/ {print $2}')
    "$root/node_modules/.bin/esbuild" --bundle --platform=browser "--define:process.env.NODE_ENV=\"$mode\"" \
      "$root/corpus_cases/$e.js" --outfile="$tmp/wire.$e.js" --log-level=error
    esb=$(stat -c %s "$tmp/wire.$e.js"); esb_br=$(brotli5 "$tmp/wire.$e.js")
    wire_rows+="| $e | $mode | $mods | $plain | $br | $esb | $esb_br | $(ratio_of "$br" "$esb_br") |"$'\n'
  done
done
wire_md() {
  echo "Bytes on the wire: the bundler's brotli answer (\`csgi-bundle --mode M --accept-encoding br\`, quality 5)"
  echo "vs esbuild's output (not minified, \`--define:process.env.NODE_ENV=\"M\"\`) compressed by brotli at the"
  echo "same quality (Node's zlib). Both follow only the live branch of a \`process.env.NODE_ENV\` test; both"
  echo "leave out the barrel modules of side-effect-free packages (\`\"sideEffects\": false\`); both drop"
  echo "unused top-level statements inside ES modules (the bundler: in production mode only, tree shaking), and"
  echo "comments and dead branches (the bundler: in production mode only; esbuild keeps comments on class members)."
  echo
  echo "| entry | mode | csgi modules | csgi plain | csgi brotli | esbuild plain | esbuild brotli | ratio (brotli) |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s' "$wire_rows"
}
[ "${BUNDLER_BENCH_PART:-}" = bytes ] && part_alone wire_md
chmod 755 "$tmp"  # nginx workers run as nobody when started by root
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

pin() { if command -v taskset >/dev/null; then taskset -c "$1" "${@:2}"; else "${@:2}"; fi; }
# Starts a server in the background on cpu $1 and records its pid (taskset execs it: same pid).
start_bg() {
  if command -v taskset >/dev/null; then taskset -c "$1" "${@:2}" & else "${@:2}" & fi
  pids+=($!)
}
wait_port() {
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
    sleep 0.1
  done
  return 1
}
# wrk summary → "req/s latency_avg"
run_wrk() {
  local hdr=()
  [ -n "${2:-}" ] && hdr=(-H "$2")
  pin 1 wrk -t1 -c50 -d"${dur}s" --latency "${hdr[@]}" "$1" > "$tmp/wrk.txt" 2>&1 || true
  local rps lat
  rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/wrk.txt")
  lat=$(awk '/^ +Latency/ {print $2; exit}' "$tmp/wrk.txt")
  echo "${rps:-0} ${lat:-?}"
}

# --- 1. served: bundler (cached) vs nginx (static file of the same bytes) ---
# Both servers run side by side (cpu0); the three URLs are measured in alternation, $rounds rounds,
# and the medians reported: on a shared 2-core box a single run of each swings by tens of percent.
served_note=""
csgi_rps=0; csgi_lat="-"; static_rps=0; static_lat="-"; nginx_rps=0; nginx_lat="-"; bytes=0
rounds=3
[ "${BENCH_QUICK:-0}" = 1 ] && rounds=1
if [ -x "$serve" ]; then
  port=$(free_port)
  export BUNDLER_FRESHNESS=inotify
  start_bg 0 "$serve" "$root" "$tmp" --listen "127.0.0.1:$port" --threads 1 > "$tmp/serve.log" 2>&1
  wait_port "$port" || fail_section "csgi-bundle-serve did not start: $(cat "$tmp/serve.log")"
  url="http://127.0.0.1:$port/bundle/~/ramda"
  curl -s -o "$tmp/ramda.bundle.js" "$url"
  bytes=$(stat -c %s "$tmp/ramda.bundle.js")
  nurl=""
  if command -v nginx >/dev/null; then
    nport=$(free_port)
    mkdir -p "$tmp/nginx/www" "$tmp/nginx/logs"
    cp "$tmp/ramda.bundle.js" "$tmp/nginx/www/ramda.bundle.js"
    chmod -R a+rX "$tmp/nginx"
    cat > "$tmp/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/logs/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on; tcp_nopush on;
  keepalive_requests 1000000;
  types { application/javascript js; }
  client_body_temp_path $tmp/nginx; proxy_temp_path $tmp/nginx; fastcgi_temp_path $tmp/nginx;
  uwsgi_temp_path $tmp/nginx; scgi_temp_path $tmp/nginx;
  server {
    listen 127.0.0.1:$nport; root $tmp/nginx/www; gzip_static on;
    location ~ \.br\$ { add_header Content-Encoding br; add_header Vary Accept-Encoding; types { } default_type application/javascript; }
  }
}
EOF
    start_bg 0 nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" > "$tmp/nginx.log" 2>&1
    wait_port "$nport" || true
    nurl="http://127.0.0.1:$nport/ramda.bundle.js"
    curl -s -o "$tmp/nginx.out" "$nurl" || true
    cmp -s "$tmp/nginx.out" "$tmp/ramda.bundle.js" ||
      served_note="nginx served $(stat -c %s "$tmp/nginx.out" 2>/dev/null || echo 0) bytes, not the bundle's $bytes: check its log."
  else
    served_note="nginx not installed: no peer figure."
  fi
  : > "$tmp/r.csgi"; : > "$tmp/r.static"; : > "$tmp/r.nginx"
  for _ in $(seq "$rounds"); do
    run_wrk "$url" >> "$tmp/r.csgi"
    # The adapter's own path for this size: the same bytes as a static file (FileBody, sendfile).
    run_wrk "http://127.0.0.1:$port/ramda.bundle.js" >> "$tmp/r.static"
    if [ -n "$nurl" ]; then run_wrk "$nurl" >> "$tmp/r.nginx"; fi
  done
  med_of() { awk '{print $1}' "$1" | median; }
  lat_of() { awk -v m="$2" '$1 == m {print $2; exit}' "$1"; }
  csgi_rps=$(med_of "$tmp/r.csgi"); csgi_lat=$(lat_of "$tmp/r.csgi" "$csgi_rps")
  static_rps=$(med_of "$tmp/r.static"); static_lat=$(lat_of "$tmp/r.static" "$static_rps")
  if [ -n "$nurl" ]; then nginx_rps=$(med_of "$tmp/r.nginx"); nginx_lat=$(lat_of "$tmp/r.nginx" "$nginx_rps"); fi
  all_runs="bundler $(awk '{printf "%s ", $1}' "$tmp/r.csgi")/ static $(awk '{printf "%s ", $1}' "$tmp/r.static")/ nginx $(awk '{printf "%s ", $1}' "$tmp/r.nginx")"
else
  served_note="csgi-bundle-serve (standalone adapter) not built: the served comparison was skipped."
fi
ratio=$(awk -v a="$csgi_rps" -v b="$nginx_rps" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')

# --- 2. cold build vs esbuild ---
cold_wall=(); cold_cpu=(); es_wall=(); es_cpu=()
timeit() {  # prints "wall_ms cpu_ms" of a command (CPU from perf's task-clock, else /usr/bin/time at 10 ms)
  local s e
  s=$(date +%s%N)
  if command -v perf >/dev/null && perf stat -x, -e task-clock -o "$tmp/perf.txt" true 2>/dev/null; then
    perf stat -x, -e task-clock -o "$tmp/perf.txt" "$@" > /dev/null 2>>"$tmp/cmd.err"
    e=$(date +%s%N)
    awk -F, -v w=$(( (e - s) / 1000 )) '/task-clock/ { printf "%.1f %.1f\n", w / 1000, $1 }' "$tmp/perf.txt"
  else
    /usr/bin/time -f '%U %S' -o "$tmp/time.txt" "$@" > /dev/null 2>>"$tmp/cmd.err"
    e=$(date +%s%N)
    awk -v w=$(( (e - s) / 1000 )) '{ printf "%.1f %.1f\n", w / 1000, ($1 + $2) * 1000 }' "$tmp/time.txt"
  fi
}
for _ in $(seq "$reps"); do
  read -r w c < <(timeit "$tool" --freshness none "$root" "$entry"); cold_wall+=("$w"); cold_cpu+=("$c")
  read -r w c < <(timeit "$root/node_modules/.bin/esbuild" --bundle "$root/node_modules/ramda/src/index.js" \
                   --outfile="$tmp/esbuild.js" --log-level=warning); es_wall+=("$w"); es_cpu+=("$c")
done
cw=$(printf '%s\n' "${cold_wall[@]}" | median); cc=$(printf '%s\n' "${cold_cpu[@]}" | median)
ew=$(printf '%s\n' "${es_wall[@]}" | median); ec=$(printf '%s\n' "${es_cpu[@]}" | median)
es_bytes=$(stat -c %s "$tmp/esbuild.js")
"$tool" --freshness none "$root" "$entry" > "$tmp/cold.js" 2>/dev/null
cold_bytes=$(stat -c %s "$tmp/cold.js")
inproc_cold=$("$tool" --freshness none --time "$root" "$entry" | awk '/cold_us/ {printf "%.1f", $2/1000}')
cold_ratio=$(awk -v a="$cw" -v b="$ew" 'BEGIN { printf "%.2f", a / b }')

# --- 3. per-request cost of the freshness check (cache hit, in-process) ---
declare -A hit
for f in none inotify stat; do
  hit[$f]=$("$tool" --freshness "$f" --time "$root" "$entry" | awk '/hit_us/ {print $2}')
done
modules=$("$tool" --freshness none --time "$root" "$entry" | awk '/modules/ {print $2}')

# --- 4. cold builds of five corpus entries vs esbuild; 6. bytes on the wire under brotli ---
entry_rows=""
for e in $ENTRIES; do
  cw_=(); cc_=(); ew_=(); ec_=()
  for _ in $(seq "$reps"); do
    read -r w c < <(timeit "$tool" --freshness none "$root" "/corpus_cases/$e.js"); cw_+=("$w"); cc_+=("$c")
    read -r w c < <(timeit "$root/node_modules/.bin/esbuild" --bundle --platform=browser "$root/corpus_cases/$e.js" \
                     --outfile="$tmp/esb.$e.js" --log-level=error); ew_+=("$w"); ec_+=("$c")
  done
  a=$(printf '%s\n' "${cw_[@]}" | median); b=$(printf '%s\n' "${ew_[@]}" | median)
  c=$(printf '%s\n' "${cc_[@]}" | median); d=$(printf '%s\n' "${ec_[@]}" | median)
  mods=$("$tool" --freshness none "$root" "/corpus_cases/$e.js" 2>&1 >/dev/null | awk '/X-Bundle-Modules/ {print $2}')
  entry_rows+="| $e ($mods modules) | $a ms | $b ms | $(ratio_of "$a" "$b") | $c ms | $d ms | $(ratio_of "$c" "$d") |"$'\n'
done

# --- 5. the react + react-dom bundle served cached, brotli and gzip, vs nginx (same bytes) ---
enc_rows=""
if [ -x "$serve" ] && [ -n "${nurl:-}" ]; then
  rurl="http://127.0.0.1:$port/bundle/corpus_cases/react.js"
  www="$tmp/nginx/www"
  curl -s -o "$www/react.js" "$rurl"
  curl -s -H 'Accept-Encoding: gzip' -o "$www/react.js.gz" "$rurl"
  curl -s -H 'Accept-Encoding: br' -o "$www/react.js.br" "$rurl"
  chmod a+r "$www"/react.js*
  nbase="http://127.0.0.1:$nport"
  curl -s -H 'Accept-Encoding: gzip' -o "$tmp/n.gz" "$nbase/react.js"
  curl -s -o "$tmp/n.br" "$nbase/react.js.br"
  cmp -s "$tmp/n.gz" "$www/react.js.gz" && cmp -s "$tmp/n.br" "$www/react.js.br" ||
    served_note="$served_note nginx did not serve the same compressed bytes for react.js: check its config."
  for enc in br gzip; do
    : > "$tmp/e.csgi"; : > "$tmp/e.nginx"
    nu="$nbase/react.js"; [ "$enc" = br ] && nu="$nbase/react.js.br"
    for _ in $(seq "$rounds"); do
      run_wrk "$rurl" "Accept-Encoding: $enc" >> "$tmp/e.csgi"
      run_wrk "$nu" "Accept-Encoding: $enc" >> "$tmp/e.nginx"
    done
    x=$(awk '{print $1}' "$tmp/e.csgi" | median); y=$(awk '{print $1}' "$tmp/e.nginx" | median)
    sz=$(stat -c %s "$www/react.js.gz"); [ "$enc" = br ] && sz=$(stat -c %s "$www/react.js.br")
    enc_rows+="| $enc ($sz bytes of $(stat -c %s "$www/react.js")) | $x req/s | $y req/s | $(ratio_of "$x" "$y") |"$'\n'
  done
fi

{
  echo "## bundler"
  echo
  echo "The ramda 0.31.3 closure of \`require('ramda')\` ($modules modules), served and built."
  echo "Other engineers were compiling on this 2-core machine during the run: figures are noisy."
  echo
  echo "| what | csgi bundler | peer | ratio csgi/peer |"
  echo "|---|---|---|---|"
  echo "| served, cached bundle vs nginx static file of the same $bytes bytes, \`wrk -t1 -c50 -d${dur}s\`, median of $rounds alternated runs | $csgi_rps req/s, $csgi_lat avg | nginx $nginx_rps req/s, $nginx_lat avg | $ratio |"
  echo "| same bytes as a static file through the same adapter (csgi Static, sendfile) | $static_rps req/s, $static_lat avg | nginx $nginx_rps req/s | $(awk -v a="$static_rps" -v b="$nginx_rps" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }') |"
  echo "| cold build (new process, empty caches), wall, median of $reps | $cw ms | \`esbuild --bundle\` $ew ms | $cold_ratio |"
  echo "| cold build, CPU (user+sys) | $cc ms | esbuild $ec ms | $(awk -v a="$cc" -v b="$ec" 'BEGIN { printf "%.2f", a / b }') |"
  echo "| cold build inside the process (construct + first request) | $inproc_cold ms | | |"
  echo "| output bytes | $cold_bytes (sources verbatim, one JS string each) | esbuild $es_bytes (comments dropped) | |"
  echo
  echo "Per-request cost of a cache hit (env built, freshness check, lookup, headers; body shared, not copied),"
  echo "in-process over 20000 requests: freshness none ${hit[none]} µs, inotify ${hit[inotify]} µs (a generation"
  echo "compare; the watcher thread does the rest), stat ${hit[stat]} µs (re-stats all $modules files and their directories)."
  [ -n "${all_runs:-}" ] && { echo; echo "Every served run, req/s: ${all_runs}."; }
  [ -n "$served_note" ] && { echo; echo "$served_note"; }
  echo
  echo "Cold builds of five entries of the npm corpus (tests/middleware/bundler/corpus_cases/E.js, a new"
  echo "process each time, median of $reps): \`csgi-bundle --freshness none ROOT /corpus_cases/E.js\` vs"
  echo "\`esbuild --bundle --platform=browser corpus_cases/E.js --outfile=…\` ($ESBUILD)."
  echo
  echo "| entry | csgi wall | esbuild wall | ratio | csgi CPU | esbuild CPU | ratio |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s' "$entry_rows"
  echo
  wire_md
  echo
  transform_md
  if [ -n "$enc_rows" ]; then
    echo
    echo "The cached react + react-dom bundle (\`/bundle/corpus_cases/react.js\`) served compressed vs nginx"
    echo "serving the same bytes from files (gzip: \`gzip_static on\`; brotli: a \`.br\` file with"
    echo "\`Content-Encoding: br\`), \`wrk -t1 -c50 -d${dur}s -H 'Accept-Encoding: …'\`, median of $rounds alternated runs:"
    echo
    echo "| coding | csgi bundler | nginx | ratio |"
    echo "|---|---|---|---|"
    printf '%s' "$enc_rows"
  fi
  echo
  echo "![bundler](charts/bundler.png)"
  echo
  echo "Commands: \`BUNDLER_FRESHNESS=inotify csgi-bundle-serve ROOT DOCROOT --listen 127.0.0.1:PORT --threads 1\`"
  echo "(pinned to cpu0), \`wrk -t1 -c50 -d${dur}s --latency http://127.0.0.1:PORT/bundle/~/ramda\` (cpu1);"
  echo "nginx 1 worker, sendfile, the bytes fetched from the bundler saved as a file;"
  echo "\`csgi-bundle --freshness none ROOT /~/ramda\` vs \`esbuild --bundle node_modules/ramda/src/index.js --outfile=…\`"
  echo "($ESBUILD), both timed wall-clock, CPU from \`perf stat -e task-clock\`; \`csgi-bundle --freshness MODE --time ROOT /~/ramda\` for hits."
} > "$md"

"$PY" - "$charts/bundler.png" "$csgi_rps" "$nginx_rps" "$cw" "$ew" <<'EOF' || echo "chart skipped" >&2
import sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
path, crps, nrps, cw, ew = sys.argv[1], *map(float, sys.argv[2:])
fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
a.bar(["csgi bundler", "nginx static"], [crps, nrps], color=["#3070b0", "#999999"])
a.set_title("cached ramda bundle, wrk -c50 (req/s)")
b.bar(["csgi bundler", "esbuild"], [cw, ew], color=["#3070b0", "#999999"])
b.set_title("cold build, wall (ms)")
fig.tight_layout()
fig.savefig(path, dpi=100)
EOF
cat "$md"
