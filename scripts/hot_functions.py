#!/usr/bin/env python3
"""Writes adapters/cli/hot_functions.txt: the functions of the `csgi` program that run while it starts and
serves its common requests, which the link places together at the front of its text (lld
--symbol-ordering-file), so that a started server maps only a few pages of its own code.

Usage: scripts/hot_functions.py BUILD_DIR   (needs valgrind; run it again after the hot path changes:
names that no longer exist are ignored by the link, new hot functions are only laid out less well)."""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build"))
csgi = os.path.join(build, "adapters", "cli", "csgi")
hello = os.path.join(build, "bench", "peers", "libcsgi_bench_hello.so")
sys.path.insert(0, os.path.join(root, "tests"))
from ports import free_port  # noqa: E402


def get(port, path, headers=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), headers=headers or {})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def keep_alive(port, path, n):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        for _ in range(n):
            s.sendall(b"GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % path.encode())
            data = b""
            while b"\r\n\r\n" not in data:
                data += s.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
            while len(body) < length:
                body += s.recv(65536)


def profile(args, requests, out):
    port = free_port()
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--demangle=no", "--callgrind-out-file=" + out, csgi,
                          "serve", "--listen", "127.0.0.1:%d" % port, "--threads", "1"] + args,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError("csgi did not start under valgrind")
                time.sleep(0.2)
        requests(port)
    finally:
        p.terminate()
        p.wait(timeout=60)


def executed(out):
    """Names of the functions of the csgi binary that ran, from a callgrind file."""
    names, objects, current, ran = {}, {}, None, set()
    for line in open(out):
        m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3):
                objects[m.group(2)] = m.group(3)
            if m.group(1) == "ob":
                current = objects[m.group(2)]
            continue
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3)
            if m.group(1) == "fn" and current == csgi:
                ran.add(names[m.group(2)])
    return ran


def main():
    with tempfile.TemporaryDirectory() as tmp:
        site = os.path.join(tmp, "site")
        os.mkdir(site)
        with open(os.path.join(site, "index.html"), "w") as f:
            f.write("<p>hello</p>\n" * 80)
        runs = [
            (["--app", hello], lambda port: (get(port, "/"), keep_alive(port, "/", 20))),
            (["--demo"], lambda port: (get(port, "/hello"), keep_alive(port, "/hello", 20))),
            (["--static", site], lambda port: (get(port, "/index.html"), keep_alive(port, "/index.html", 20),
                                               get(port, "/index.html", {"Range": "bytes=0-9"}))),
        ]
        ran = set()
        for i, (args, requests) in enumerate(runs):
            out = os.path.join(tmp, "cg%d.out" % i)
            profile(args, requests, out)
            ran |= executed(out)
    nm = subprocess.run(["nm", "--defined-only", csgi], capture_output=True, text=True, check=True).stdout
    address = {}
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            address[parts[2]] = int(parts[0], 16)
    hot = sorted((n for n in ran if n in address), key=lambda n: address[n])
    target = os.path.join(root, "adapters", "cli", "hot_functions.txt")
    with open(target, "w") as f:
        f.write("\n".join(hot) + "\n")
    print("%s: %d functions" % (target, len(hot)))


main()
