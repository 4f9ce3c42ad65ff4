#!/usr/bin/env python3
"""Hostile clients against `csgi serve` (docs/reliability.md §3): slowhttptest's slow headers, slow body
and slow read, 1,000 connections each, while wrk sends normal traffic.
  * legitimate throughput stays >= 80% of the same run's baseline
  * a slow connection is closed within 1 s of its limit (--header-timeout / --body-timeout / --send-timeout)
  * the server's open file descriptors return to their baseline afterwards
On one machine the attack tool competes with wrk and the server for the same cores (slowhttptest's slow
read mode alone keeps a core busy in the kernel, the server using ~0% meanwhile), so by default it runs
under SCHED_IDLE (`chrt --idle 0`: only CPU time nobody else wants; its 1,000 connections are opened before
wrk starts and stay open). --attacker-normal runs it at normal priority. Each row also reports the
server's CPU time per legitimate request, which does not depend on where the attacker's cycles go.

  hostile.py --csgi build/adapters/cli/csgi --app build/tests/reliability/libcanary_app.so [--seconds 5]
             [--markdown FILE]
"""
import argparse
import os
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab  # noqa: E402

LIMIT = 2.0  # seconds, for every timeout under test


# With two or more cores the server runs on CPU 0 and wrk on CPU 1 in every phase, so that phases differ
# only by the attack (unpinned, runs moved between cores and the rates jumped by ~20% from run to run).
PIN_SERVER = ["taskset", "-c", "0"] if (os.cpu_count() or 1) >= 2 else []
PIN_CLIENT = ["taskset", "-c", "1"] if (os.cpu_count() or 1) >= 2 else []


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(pid, url, seconds):
    """wrk for `seconds`; adds the server's CPU microseconds per request."""
    c0 = cpu_seconds(pid)
    res = netlab.wrk(url, seconds, connections=20, prefix=PIN_CLIENT)
    used = cpu_seconds(pid) - c0
    res["us_per_req"] = used * 1e6 / res["requests"] if res["requests"] else 0.0
    return res


def close_time(port, send, read_response=False):
    """Seconds until the server closes a connection that sent `send` and then stalls."""
    s = socket.create_connection(("127.0.0.1", port))
    if read_response:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    start = time.monotonic()
    s.sendall(send)
    s.settimeout(LIMIT + 10)
    try:
        if read_response:
            time.sleep(LIMIT + 3)  # never read: the server's writes stall
            while s.recv(65536):
                pass
        else:
            while s.recv(65536):
                pass
    except OSError:
        pass
    elapsed = time.monotonic() - start
    s.close()
    return elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csgi", required=True)
    ap.add_argument("--app", required=True)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--markdown")
    ap.add_argument("--attacker-normal", action="store_true",
                    help="run slowhttptest at normal priority instead of SCHED_IDLE")
    args = ap.parse_args()
    if not shutil.which("slowhttptest"):
        print("SKIP: slowhttptest not installed")
        return 0
    work = netlab.tempdir()
    port = netlab.free_port()

    def raise_fds():
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(16384, hard), hard))
    big = os.path.join(work, "big")
    argv = [os.path.abspath(args.csgi), "serve", "--app", os.path.abspath(args.app), "--listen", f"127.0.0.1:{port}",
            "--header-timeout", str(LIMIT), "--body-timeout", str(LIMIT), "--send-timeout", str(LIMIT),
            "--max-connections", "4000"]
    server = subprocess.Popen(PIN_SERVER + argv, stdout=open(os.path.join(work, "csgi.log"), "w"), stderr=subprocess.STDOUT,
                              preexec_fn=raise_fds, start_new_session=True)
    rows, ok_all = [], True
    try:
        netlab.wait_port("127.0.0.1", port)
        url = f"http://127.0.0.1:{port}/canary"
        fd0 = open_fds(server.pid)
        base = measured(server.pid, url, args.seconds)
        rows.append(("baseline (no attack)", f"{base['rps']:.0f}", "1.00", f"server CPU {base['us_per_req']:.1f} µs/request", "-"))
        prio = [] if args.attacker_normal else ["chrt", "--idle", "0"]
        modes = {"slow headers": ["-H"], "slow body": ["-B", "-s", "65536"],
                 "slow read": ["-X", "-k", "3", "-n", "5", "-w", "1", "-y", "4", "-z", "1"]}
        # Slow body goes to a path whose app reads the body (/canary answers without reading it, and the
        # server then closes instead of waiting); slow read to a delayed response.
        targets = {"slow headers": url, "slow body": f"http://127.0.0.1:{port}/upload",
                   "slow read": f"http://127.0.0.1:{port}/sleep?ms=1"}
        for name, flags in modes.items():
            attack = subprocess.Popen(prio + ["slowhttptest", "-c", "1000", "-r", "500", "-i", "1", "-l", str(args.seconds + 6),
                                       "-u", targets[name],
                                       "-p", "3"] + flags, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(3)
            peak = open_fds(server.pid)
            during = measured(server.pid, url, args.seconds)
            attack.wait(60)
            ratio = during["rps"] / base["rps"] if base["rps"] else 0
            # The attack must really hold its connections, or the ratio says nothing.
            held = peak - fd0
            ok = ratio >= 0.8 and during["errors"] + during["non2xx"] == 0 and held >= 300
            ok_all &= ok
            rows.append((f"{name}: slowhttptest 1000 conns + wrk", f"{during['rps']:.0f}", f"{ratio:.2f}",
                         f"{held} attack connections held at peak; server CPU {during['us_per_req']:.1f} µs/request",
                         "pass" if ok else "FAIL"))
        # Timeout precision, one connection each.
        t_head = close_time(port, b"GET / HTTP/1.1\r\nHost: a\r\nX-Slow: ")
        t_body = close_time(port, b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n0123456789")
        for name, t in (("header timeout", t_head), ("body timeout", t_body)):
            ok = LIMIT - 0.05 <= t <= LIMIT + 1.0
            ok_all &= ok
            rows.append((f"{name} {LIMIT:.0f} s: closed after", f"{t:.2f} s", "-", "-", "pass" if ok else "FAIL"))
        time.sleep(LIMIT + 1.5)
        fd1 = open_fds(server.pid)
        ok = fd1 <= fd0 + 2
        ok_all &= ok
        rows.append(("open fds: before / after all attacks", f"{fd0} / {fd1}", "-", "-", "pass" if ok else "FAIL"))
        alive = server.poll() is None
        ok_all &= alive
    finally:
        server.terminate()
        server.wait(20)
    table = "| load | req/s or value | ratio to baseline | note | result |\n|---|---|---|---|---|\n" + "".join(
        "| " + " | ".join(r) + " |\n" for r in rows)
    print(table)
    if args.markdown:
        open(args.markdown, "w").write(table)
    print("PASS" if ok_all else "FAIL")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
