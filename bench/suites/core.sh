#!/usr/bin/env bash
# Bench suite "core": env construction, a 5-middleware stack, Request parsing (bench/core_bench.cpp,
# Google Benchmark). Called by scripts/bench.sh as `bash core.sh BUILD_DIR OUT_DIR`; writes
# OUT_DIR/core.md and keeps the raw JSON in OUT_DIR/core.json. BENCH_QUICK=1: shorter runs.
set -euo pipefail
build=$(realpath "${1:-build}")
out=$(realpath "${2:-bench/out}")
mkdir -p "$out"
bin="$build/bench/core_bench"
[ -x "$bin" ] || cmake --build "$build" --target core_bench -j"$(nproc)"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
  min_time=0.05 reps=3
else
  min_time=0.5 reps=7
fi
cmd=("$bin" --benchmark_min_time="$min_time" --benchmark_repetitions="$reps"
     --benchmark_report_aggregates_only=true --benchmark_format=json --benchmark_out="$out/core.json"
     --benchmark_out_format=json)
echo "${cmd[*]}"
"${cmd[@]}" > /dev/null

/usr/bin/python3 - "$out/core.json" "$out/core.md" "$min_time" "$reps" <<'EOF'
import json, sys
src, dst, min_time, reps = sys.argv[1:5]
data = json.load(open(src))
rows = {}
for b in data["benchmarks"]:
    if b.get("run_type") != "aggregate":
        continue
    name = b["run_name"]
    agg = b["aggregate_name"]
    rows.setdefault(name, {})[agg] = b

labels = {
    "BM_EnvBuild12Headers": ("env from a parsed request, 12 headers (populate_env + add_header, reused Env)", "< 300 ns, 0 allocs"),
    "BM_EnvBuildAndStack5": ("env build + hello app through 5 middlewares (Builder)", "< 300 ns"),
    "BM_Stack5Only": ("5-middleware stack + hello app alone (env built once)", ""),
    "BM_ParseQuery10": ("csgi::parse_query, 10 parameters", ""),
    "BM_RequestQueryParameters10": ("Request::query_parameters(), 10 parameters, cold (parse + cache in env)", ""),
    "BM_RequestQueryParametersCached": ("Request::param() on an env already parsed", ""),
    "BM_ParseCookies": ("Request::cookie(), 3 cookies, cold", ""),
    "BM_Multipart/16384": ("multipart: a field + a 16 KiB file (in memory)", ""),
    "BM_Multipart/1048576": ("multipart: a field + a 1 MiB file (to a temp file)", ""),
}

def ns(b):
    t = b["cpu_time"]
    unit = b.get("time_unit", "ns")
    return t * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]

ctx = data["context"]
lines = ["## core: env, middleware stack and Request helpers (Google Benchmark)", ""]
lines.append(f"CPU time per operation, median of {reps} repetitions (min {min_time} s each); `allocs` = heap "
             "allocations per operation, counted by a replaced `operator new` in the benchmark binary. "
             f"{ctx.get('num_cpus')} CPUs at {ctx.get('mhz_per_cpu')} MHz, load average at start "
             f"{', '.join(f'{x:.1f}' for x in ctx.get('load_avg', []))} (other builds running share the machine: "
             "figures are noisy, compare ratios within one run).")
lines.append("")
lines.append("| operation | median ns/op | mean ± sd ns | allocs/op | throughput | target |")
lines.append("|---|---|---|---|---|---|")
for name, (label, target) in labels.items():
    r = rows.get(name)
    if not r or "median" not in r:
        continue
    med = r["median"]
    spread = f"{ns(r['mean']):.0f} ± {ns(r['stddev']):.0f}" if "stddev" in r and "mean" in r else ""
    allocs = med.get("allocs")
    allocs_s = "" if allocs is None else (f"{allocs:.0f}" if abs(allocs - round(allocs)) < 0.01 else f"{allocs:.2f}")
    bps = med.get("bytes_per_second")
    tput = f"{bps / 2**20:.0f} MiB/s" if bps else ""
    lines.append(f"| {label} | {ns(med):.0f} | {spread} | {allocs_s} | {tput} | {target} |")
lines.append("")
lines.append("Command: `" + " ".join(["bench/core_bench", f"--benchmark_min_time={min_time}",
             f"--benchmark_repetitions={reps}", "--benchmark_report_aggregates_only=true",
             "--benchmark_format=json"]) + "` (bench/suites/core.sh).")
open(dst, "w").write("\n".join(lines) + "\n")
EOF
cat "$out/core.md"
