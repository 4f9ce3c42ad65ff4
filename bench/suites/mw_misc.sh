#!/usr/bin/env bash
# Bench suite "mw_misc": per-request cost of access, auth_basic, reverse_proxy, request_id, runtime,
# http_exceptions, error_document, cascade, url_map, server_status and cgi_bin, in-process
# (bench/mw_misc_bench.cpp, Google Benchmark): env of a 12-header request built, hello through one layer,
# response drained. Called by scripts/bench.sh as `bash mw_misc.sh BUILD_DIR OUT_DIR`; writes
# OUT_DIR/mw_misc.md and keeps the raw JSON in OUT_DIR/mw_misc.json. BENCH_QUICK=1: shorter runs.
set -euo pipefail
build=$(realpath "${1:-build}")
out=$(realpath "${2:-bench/out}")
mkdir -p "$out"
bin="$build/bench/mw_misc_bench"
[ -x "$bin" ] || cmake --build "$build" --target mw_misc_bench -j"$(nproc)"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
  min_time=0.05 reps=3
else
  min_time=0.3 reps=5
fi
cmd=("$bin" --benchmark_min_time="$min_time" --benchmark_repetitions="$reps"
     --benchmark_report_aggregates_only=true --benchmark_format=json --benchmark_out="$out/mw_misc.json"
     --benchmark_out_format=json)
echo "${cmd[*]}"
"${cmd[@]}" > /dev/null

shown="${cmd[*]}"
shown=${shown//$build/BUILD}
/usr/bin/python3 - "$out/mw_misc.json" "$out/mw_misc.md" "${shown//$out/OUT}" <<'PY'
import json, sys
src, dst, command = sys.argv[1:4]
data = json.load(open(src))
med = {}
for b in data["benchmarks"]:
    if b.get("run_type") == "aggregate" and b["aggregate_name"] == "median":
        scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        med[b["run_name"]] = b["cpu_time"] * scale
labels = {
    "BM_Bare": "hello, no middleware (env build + call + drain)",
    "BM_Runtime": "runtime (X-Runtime)",
    "BM_RequestIdIncoming": "request_id, valid incoming id",
    "BM_RequestIdGenerated": "request_id, generated id",
    "BM_ReverseProxy": "reverse_proxy, 2-hop X-Forwarded-For + Proto from loopback",
    "BM_Access3Rules": "access, 3 rules (method, CIDR+prefix, prefix)",
    "BM_HttpExceptions": "http_exceptions (nothing thrown)",
    "BM_ServerStatusRecording": "server_status, recording (no adapter attached)",
    "BM_ErrorDocumentPass": "error_document, 200 passes",
    "BM_Cascade404Then200": "cascade, first app 404, second answers",
    "BM_UrlMap3": "url_map, 3 locations",
    "BM_AuthBasicCallback": "auth_basic, callback",
    "BM_AuthBasicSha1": "auth_basic, htpasswd {SHA}",
    "BM_AuthBasicSha512Crypt": "auth_basic, htpasswd $6$ (SHA-512-crypt, 5000 rounds)",
    "BM_AuthBasicBcrypt5": "auth_basic, htpasswd $2y$ (bcrypt cost 5)",
    "BM_CgiBinShell": "cgi_bin, /bin/sh hello script (spawn + pipes + reap; parent CPU only)",
    "BM_StackOfSeven": "stack: reverse_proxy, server_status, request_id, runtime, access, http_exceptions, error_document",
}
bare = med.get("BM_Bare")
lines = ["## Access, auth, proxy, status and CGI middleware (per request, in-process)", "",
         "| case | CPU per request | added to bare hello | req/s one core (CPU bound) |", "|---|---:|---:|---:|"]
def fmt(ns):
    return f"{ns/1e6:.2f} ms" if ns >= 1e6 else f"{ns/1e3:.1f} µs" if ns >= 1e4 else f"{ns:.0f} ns"
for name, label in labels.items():
    if name not in med:
        continue
    t = med[name]
    add = "—" if name == "BM_Bare" or bare is None else "+" + fmt(max(t - bare, 0))
    lines.append(f"| {label} | {fmt(t)} | {add} | {1e9/t:,.0f} |")
lines += ["", "Medians of the repetitions, CPU time of the benchmark thread (a CGI script's own CPU is not counted).",
          "Command: `" + command + "`", ""]
open(dst, "w").write("\n".join(lines))
print("\n".join(lines))
PY
