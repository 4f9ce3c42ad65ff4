"""Shared pieces of the reliability tests: free ports, temp dirs, starting and stopping processes, wrk,
and the three-host network lab (Linux network namespaces joined by a bridge).

The lab's addresses are 198.18.0.0/24 (RFC 2544's benchmarking range), which exist only inside the
namespaces and the bridge this module creates; nothing leaves the machine. Needs root.
"""
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

LAB_NET = "198.18.0"
BRIDGE = "csgi-br0"


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ports import free_port  # noqa: E402,F401


def wait_port(host, port, timeout=10.0, netns=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if netns:
            ok = subprocess.run(["ip", "netns", "exec", netns, "bash", "-c", f"exec 3<>/dev/tcp/{host}/{port}"],
                                stderr=subprocess.DEVNULL).returncode == 0
        else:
            try:
                socket.create_connection((host, port), timeout=0.5).close()
                ok = True
            except OSError:
                ok = False
        if ok:
            return True
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout}s")


class Proc:
    """A child process in its own process group, stopped (TERM, then KILL) by stop()."""

    def __init__(self, argv, log, netns=None, env=None):
        if netns:
            argv = ["ip", "netns", "exec", netns] + argv
        self.log = log
        self.p = subprocess.Popen(argv, stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True,
                                  env=env)

    def signal(self, sig):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.p.pid, sig)

    def stop(self, timeout=10):
        if self.p.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.p.wait()
        return self.p.returncode


def wrk(url, seconds, connections=20, threads=1, script=None, prefix=()):
    """Runs wrk (after `prefix`, e.g. a taskset command); returns dict(requests, rps, errors, non2xx, p99_ms)."""
    argv = list(prefix) + ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "--timeout", "5s"]
    if script:
        argv += ["-s", script]
    out = subprocess.run(argv + [url], capture_output=True, text=True, timeout=seconds + 30).stdout
    res = {"requests": 0, "rps": 0.0, "errors": 0, "non2xx": 0, "p99_ms": None, "raw": out}
    m = re.search(r"(\d+) requests in", out)
    if m:
        res["requests"] = int(m.group(1))
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if m:
        res["rps"] = float(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        res["errors"] = sum(int(x) for x in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        res["non2xx"] = int(m.group(1))
    m = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    if m:
        v = float(m.group(1))
        res["p99_ms"] = v / 1000 if m.group(2) == "us" else v * 1000 if m.group(2) == "s" else v
    return res


def run(cmd, check=True):
    return subprocess.run(cmd, shell=isinstance(cmd, str), check=check, capture_output=True, text=True)


class Lab:
    """Three (or n) hosts h1..hn in namespaces csgi-h1.., at 198.18.0.11.., bridged to the root namespace
    (198.18.0.1). Use as a context manager: everything is removed on exit, also after errors."""

    def __init__(self, hosts=3):
        self.hosts = [f"csgi-h{i}" for i in range(1, hosts + 1)]
        self.addrs = [f"{LAB_NET}.{10 + i}" for i in range(1, hosts + 1)]

    def __enter__(self):
        self.teardown()
        run(f"ip link add {BRIDGE} type bridge && ip addr add {LAB_NET}.1/24 dev {BRIDGE} && ip link set {BRIDGE} up")
        for i, (ns, addr) in enumerate(zip(self.hosts, self.addrs), 1):
            run(f"ip netns add {ns}")
            run(f"ip link add csgi-v{i} type veth peer name csgi-v{i}p")
            run(f"ip link set csgi-v{i} master {BRIDGE} up")
            run(f"ip link set csgi-v{i}p netns {ns}")
            run(f"ip -n {ns} link set lo up")
            run(f"ip -n {ns} link set csgi-v{i}p name eth0")
            run(f"ip -n {ns} addr add {addr}/24 dev eth0")
            run(f"ip -n {ns} link set eth0 up")
        return self

    def teardown(self):
        for i, ns in enumerate(self.hosts, 1):
            run(f"ip netns del {ns}", check=False)
            run(f"ip link del csgi-v{i}", check=False)
        run(f"ip link del {BRIDGE}", check=False)

    def __exit__(self, *exc):
        self.teardown()
        return False


def have_root_net():
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    probe = run("ip netns add csgi-probe && ip netns del csgi-probe", check=False)
    return probe.returncode == 0


def tempdir(prefix="csgi-rel-"):
    return tempfile.mkdtemp(prefix=prefix)
