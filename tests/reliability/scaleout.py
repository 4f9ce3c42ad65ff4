#!/usr/bin/env python3
"""Scale-out behind real load balancers: three csgi hosts in network namespaces, HAProxy and nginx in
front with health checks. Checks, for each balancer:
  * kill -9 one host's server under load      -> 0 failed client GETs
  * rolling restart of all three (graceful)   -> 0 failed client GETs
and measures the balancer's overhead against talking to one host directly.

  scaleout.py --csgi build/adapters/cli/csgi --app build/tests/reliability/libcanary_app.so [--seconds 6]
              [--markdown FILE]
Exit status 0 when no request failed. Needs root (namespaces), haproxy, nginx and wrk.
"""
import argparse
import os
import shutil
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEPLOY = os.path.join(ROOT, "docs", "deploy")
BACKEND_PORT = 8080


def render(template, **values):
    text = open(os.path.join(DEPLOY, template)).read()
    for k, v in values.items():
        text = text.replace("{{" + k + "}}", str(v))
    return text


class Backends:
    def __init__(self, lab, csgi, app, work):
        self.lab, self.csgi, self.app, self.work = lab, csgi, app, work
        self.procs = [None] * len(lab.hosts)

    def start(self, i):
        # --health: HAProxy checks /readyz, which turns 503 the moment a graceful stop begins.
        argv = [self.csgi, "serve", "--health", "--app", self.app, "--listen", f"0.0.0.0:{BACKEND_PORT}",
                "--threads", "1", "--graceful-timeout", "5"]
        self.procs[i] = netlab.Proc(argv, os.path.join(self.work, f"h{i + 1}.log"), netns=self.lab.hosts[i])
        netlab.wait_port(self.lab.addrs[i], BACKEND_PORT, netns=None)

    def start_all(self):
        for i in range(len(self.procs)):
            self.start(i)

    def kill(self, i):
        self.procs[i].signal(signal.SIGKILL)
        self.procs[i].p.wait()

    def graceful_restart(self, i):
        self.procs[i].stop(timeout=15)
        self.start(i)

    def stop_all(self):
        for p in self.procs:
            if p:
                p.stop()


def start_balancer(kind, lab, work):
    port = netlab.free_port()
    servers = list(zip(range(1, len(lab.addrs) + 1), lab.addrs))
    if kind == "haproxy":
        lines = "\n".join(f"    server h{i} {a}:{BACKEND_PORT} check inter 200ms fall 2 rise 2" for i, a in servers)
        conf = render("haproxy.cfg", LISTEN=f"127.0.0.1:{port}", SERVERS=lines, RUNDIR=work)
        path = os.path.join(work, "haproxy.cfg")
        open(path, "w").write(conf)
        proc = netlab.Proc(["haproxy", "-W", "-db", "-f", path], os.path.join(work, "haproxy.log"))
    else:
        lines = "\n".join(f"        server {a}:{BACKEND_PORT} max_fails=1 fail_timeout=1s;" for _, a in servers)
        conf = render("nginx-balancer.conf", LISTEN=f"127.0.0.1:{port}", SERVERS=lines, RUNDIR=work,
                      USER="root" if os.geteuid() == 0 else os.environ.get("USER", "nobody"))
        path = os.path.join(work, "nginx.conf")
        open(path, "w").write(conf)
        proc = netlab.Proc(["nginx", "-p", work, "-c", path, "-g", "daemon off;"], os.path.join(work, "nginx.log"))
    netlab.wait_port("127.0.0.1", port)
    return proc, port


def under_load(url, seconds, action_at, action):
    """Runs wrk for `seconds` and calls action() after action_at seconds, concurrently."""
    result = {}
    t = threading.Thread(target=lambda: result.update(netlab.wrk(url, seconds, connections=20)))
    t.start()
    time.sleep(action_at)
    action()
    t.join()
    return result


def failed(r):
    return r["errors"] + r["non2xx"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csgi", required=True)
    ap.add_argument("--app", required=True)
    ap.add_argument("--seconds", type=int, default=6)
    ap.add_argument("--markdown")
    args = ap.parse_args()
    if not netlab.have_root_net():
        print("SKIP: needs root and ip netns")
        return 0
    for tool in ("haproxy", "nginx", "wrk"):
        if not shutil.which(tool):
            print(f"SKIP: {tool} not installed")
            return 0
    rows, bad = [], 0
    work = netlab.tempdir()
    with netlab.Lab(3) as lab:
        backends = Backends(lab, os.path.abspath(args.csgi), os.path.abspath(args.app), work)
        backends.start_all()
        try:
            direct = netlab.wrk(f"http://{lab.addrs[0]}:{BACKEND_PORT}/canary", args.seconds)
            rows.append(("direct to one host", "-", direct["rps"], direct["p99_ms"], failed(direct), "baseline"))
            for kind in ("haproxy", "nginx"):
                lb, port = start_balancer(kind, lab, work)
                url = f"http://127.0.0.1:{port}/canary"
                try:
                    steady = netlab.wrk(url, args.seconds)
                    rows.append((f"{kind}, 3 hosts", "none", steady["rps"], steady["p99_ms"], failed(steady),
                                 f"{steady['rps'] / direct['rps']:.2f}x direct" if direct["rps"] else ""))
                    r = under_load(url, args.seconds, args.seconds / 3, lambda: backends.kill(1))
                    rows.append((f"{kind}, 3 hosts", "kill -9 host 2 mid-load", r["rps"], r["p99_ms"], failed(r), ""))
                    bad += failed(r) + failed(steady)
                    backends.start(1)
                    time.sleep(1)

                    # A rolling restart waits for each host to count as healthy again before the next:
                    # HAProxy's active check needs 2 x 200 ms; nginx's passive check forgets a failure
                    # after fail_timeout (1 s).
                    pause = 0.8 if kind == "haproxy" else 1.5

                    def rolling():
                        for i in range(3):
                            backends.graceful_restart(i)
                            time.sleep(pause)
                    r = under_load(url, args.seconds + 8, 1, rolling)
                    rows.append((f"{kind}, 3 hosts", "rolling restart of all 3", r["rps"], r["p99_ms"], failed(r), ""))
                    bad += failed(r)
                finally:
                    lb.stop()
        finally:
            backends.stop_all()
    table = "| setup | fault | req/s | p99 ms | failed requests | note |\n|---|---|---|---|---|---|\n"
    for r in rows:
        table += f"| {r[0]} | {r[1]} | {r[2]:.0f} | {r[3] if r[3] is None else round(r[3], 2)} | {r[4]} | {r[5]} |\n"
    print(table)
    if args.markdown:
        open(args.markdown, "w").write(table)
    print(f"{'PASS' if bad == 0 else 'FAIL'}: {bad} failed requests")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
