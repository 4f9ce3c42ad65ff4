#!/usr/bin/python3
"""The cost of --metrics on hello: `csgi serve --demo` (one process, one io thread, pinned to cpu0) with and
without --metrics, rounds alternated, `wrk -t1 -c50` on /hello pinned to cpu1. Prints each round's req/s and
the server's CPU time per request (utime + stime from /proc over the run), then the medians and the
ratios (on / off). Usage: metrics_cost.py CSGI_EXE [ROUNDS] [SECONDS]"""
import os
import re
import statistics
import subprocess
import sys
import time

CSGI = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
SECONDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def run(metrics):
    args = ["taskset", "-c", "0", CSGI, "serve", "--demo", "--listen", "127.0.0.1:0"] + (["--metrics"] if metrics else [])
    p = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        port = None
        for _ in range(20):
            m = re.search(r"127\.0\.0\.1:(\d+)", p.stdout.readline())
            if m:
                port = int(m.group(1))
                break
        if port is None:
            raise SystemExit("csgi did not start")
        subprocess.run(["wrk", "-t1", "-c50", "-d1s", "http://127.0.0.1:%d/hello" % port], capture_output=True)  # warm-up
        before = cpu_seconds(p.pid)
        out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c50", "-d%ds" % SECONDS,
                              "http://127.0.0.1:%d/hello" % port], capture_output=True, text=True).stdout
        used = cpu_seconds(p.pid) - before
        n = int(re.search(r"(\d+) requests in", out).group(1))
        rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
        if "Socket errors" in out or "Non-2xx" in out:
            raise SystemExit("wrk saw errors:\n" + out)
        return rps, used / n * 1e6
    finally:
        p.terminate()
        p.wait()


results = {False: [], True: []}
for r in range(ROUNDS):
    for metrics in (False, True) if r % 2 == 0 else (True, False):
        rps, us = run(metrics)
        results[metrics].append((rps, us))
        print("round %d  metrics %-3s  %9.0f req/s  %6.2f µs CPU/request" % (r + 1, "on" if metrics else "off", rps, us))
        time.sleep(0.2)
off_rps = statistics.median(x[0] for x in results[False])
on_rps = statistics.median(x[0] for x in results[True])
off_us = statistics.median(x[1] for x in results[False])
on_us = statistics.median(x[1] for x in results[True])
print("median  off %.0f req/s %.2f µs/request; on %.0f req/s %.2f µs/request" % (off_rps, off_us, on_rps, on_us))
print("on/off: req/s %.3f×, CPU per request %.3f×" % (on_rps / off_rps, on_us / off_us))
