#!/usr/bin/env python3
"""Soak under AddressSanitizer/LeakSanitizer (docs/reliability.md §5): `csgi serve` built with ASan runs a
mixed workload at about half of its measured capacity for --seconds, while its resident memory is sampled
every second. Passes when wrk saw no errors, RSS after the warm-up grew by less than --max-growth (5%),
and the server exits cleanly on SIGTERM with no LeakSanitizer or AddressSanitizer report.

The workload rotates over: GET of the app, GET of a static file (sendfile), a Range request, a POST with a
4 KB body, a chunked POST, a delayed response answered by the app's worker thread, and a request that
closes its connection — so parsing, the env pool, bodies, files, delayed responses and connection teardown all run.

  soak.py --csgi build-asan/adapters/cli/csgi --app build-asan/tests/reliability/libcanary_app.so
          [--seconds 600] [--markdown FILE]
"""
import argparse
import os
import signal
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab  # noqa: E402

LUA = r"""
-- Requests are pre-formatted with their own Host (wrk.host is not known yet when the script loads).
local body = string.rep("x", 4096)
local function req(method, path, headers, b)
  headers = headers or {}
  headers["Host"] = "soak"
  return wrk.format(method, path, headers, b)
end
local reqs = {
  req("GET", "/canary"),
  req("GET", "/file.txt"),
  req("GET", "/file.txt", {["Range"] = "bytes=100-1099"}),
  req("POST", "/echo", {["Content-Type"] = "text/plain"}, body),
  "POST /chunked HTTP/1.1\r\nHost: soak\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" ..
    string.rep("y", 1024) .. "\r\n5\r\nhello\r\n0\r\n\r\n",
  req("GET", "/later"),
  req("GET", "/closing", {["Connection"] = "close"}),
}
local i = 0
request = function()
  i = i + 1
  return reqs[(i % #reqs) + 1]
end
local delay_ms = DELAY
delay = function() return delay_ms end
"""


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def run_wrk(url, seconds, script_path, delay_ms, connections):
    lua = LUA.replace("DELAY", str(delay_ms))
    with open(script_path, "w") as f:
        f.write(lua)
    return netlab.wrk(url, seconds, connections=connections, script=script_path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csgi", required=True)
    ap.add_argument("--app", required=True)
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--max-growth", type=float, default=0.05)
    ap.add_argument("--markdown")
    ap.add_argument("--rss-log", help="write the RSS samples (seconds, KiB) here")
    args = ap.parse_args()

    work = netlab.tempdir("csgi-soak-")
    static = os.path.join(work, "static")
    os.makedirs(static)
    with open(os.path.join(static, "file.txt"), "w") as f:
        f.write("0123456789abcdef" * 1024)
    port = netlab.free_port()
    url = f"http://127.0.0.1:{port}"
    log = os.path.join(work, "server.log")
    env = dict(os.environ)
    # A small quarantine, so that ASan's own delayed frees do not read as growth; leaks end the process
    # with exit code 23 at the stop.
    env["ASAN_OPTIONS"] = "detect_leaks=1:quarantine_size_mb=16:malloc_context_size=8:exitcode=23"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    srv = netlab.Proc([args.csgi, "serve", "--app", args.app, "--static", static, "--threads", "2",
                       "--listen", f"127.0.0.1:{port}", "--access-log", os.path.join(work, "access.log")],
                      log, env=env)
    ok = True
    notes = []
    try:
        if not netlab.wait_port("127.0.0.1", port, 30):
            print(open(log, errors="replace").read())
            print("FAIL: the server did not start")
            return 1
        script = os.path.join(work, "soak.lua")
        full = run_wrk(url, 3, script, 0, args.connections)
        capacity = full["rps"]
        # Half load: each connection waits between requests so that the rate is about half of capacity.
        delay = max(1, round(1000.0 * args.connections / max(capacity, 1.0)))
        probe = run_wrk(url, 3, script, delay, args.connections)
        if probe["rps"] > 0:
            delay = max(1, round(delay * probe["rps"] / (capacity / 2)))

        samples = []
        stop = threading.Event()

        def sample():
            while not stop.wait(1.0):
                v = rss_kb(srv.p.pid)
                if v:
                    samples.append((time.monotonic(), v))

        sampler = threading.Thread(target=sample)
        sampler.start()
        t0 = time.monotonic()
        res = run_wrk(url, args.seconds, script, delay, args.connections)
        stop.set()
        sampler.join()
        if args.rss_log:
            with open(args.rss_log, "w") as f:
                f.writelines(f"{t - t0:.0f} {v}\n" for t, v in samples)

        warm = t0 + max(10.0, args.seconds * 0.2)
        after = [v for t, v in samples if t >= warm]
        if len(after) < 10:
            after = [v for _, v in samples]
        base = statistics.median(after[:5])
        end = statistics.median(after[-5:])
        growth = end / base - 1.0
        lost = res["errors"] + res["non2xx"]
        if lost:
            ok = False
            notes.append(f"{lost} failed requests")
        if growth >= args.max_growth:
            ok = False
            notes.append(f"RSS grew {growth * 100:.1f}%")

        srv.signal(signal.SIGTERM)
        try:
            rc = srv.p.wait(60)
        except Exception:
            rc = None
        text = open(log, errors="replace").read()
        leak = "LeakSanitizer" in text or "ERROR: AddressSanitizer" in text or "runtime error:" in text
        if rc != 0 or leak:
            ok = False
            notes.append(f"exit status {rc}" + ("; sanitizer report in the log" if leak else ""))
            print(text[-6000:])
        row = (f"| {args.seconds} s, {res['rps']:.0f} req/s ({res['rps'] / max(capacity, 1):.2f}× of {capacity:.0f} "
               f"capacity), wrk -c{args.connections} | {res['requests']} | {lost} | {base / 1024:.1f} MB → "
               f"{end / 1024:.1f} MB ({growth * 100:+.1f}%) | {'none' if not leak and rc == 0 else 'REPORTED'} | "
               f"{'pass' if ok else 'FAIL: ' + '; '.join(notes)} |")
        header = "| ASan soak (mixed workload, --threads 2) | requests | failed | RSS after warm-up → end | leaks | result |\n|---|---|---|---|---|---|"
        print(header)
        print(row)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(header + "\n" + row + "\n")
        return 0 if ok else 1
    finally:
        srv.stop()


if __name__ == "__main__":
    sys.exit(main())
