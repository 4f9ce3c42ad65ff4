#!/usr/bin/python3
"""The cost of --proxy-protocol: the server's CPU time (all threads, /proc/PID/task/*/schedstat) per request
of `csgi serve --demo` for GET /hello over keep-alive connections, with the option on (each connection
starts with a v1 or v2 header) and off, the best of ROUNDS runs each. SEQUENTIAL=1 sends one request at a
time instead of pipelining each connection's requests.
Usage: proxy_protocol_cost.py CSGI_EXE [requests per connection] [connections] [rounds]"""
import os, re, socket, struct, subprocess, sys, time
CSGI = sys.argv[1]
PER = int(sys.argv[2]) if len(sys.argv) > 2 else 100
CONNS = int(sys.argv[3]) if len(sys.argv) > 3 else 200
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
REQ = b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
V2 = b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + struct.pack(">H", 12) + socket.inet_aton("203.0.113.7") + socket.inet_aton("198.51.100.1") + struct.pack(">HH", 40000, 443)
V1 = b"PROXY TCP4 203.0.113.7 198.51.100.1 40000 443\r\n"

def cpu(pid):  # seconds on CPU, all threads (schedstat: ns)
    return sum(int(open("/proc/%d/task/%s/schedstat" % (pid, t)).read().split()[0]) for t in os.listdir("/proc/%d/task" % pid)) / 1e9

def start(args):
    p = subprocess.Popen([CSGI, "serve", "--demo", "--listen", "127.0.0.1:0"] + args, stdout=subprocess.PIPE, text=True)
    port = int(re.search(r":(\d+)/", p.stdout.readline()).group(1))
    return p, port

SEQUENTIAL = os.environ.get("SEQUENTIAL") == "1"


def load(port, header):
    batch = REQ * PER
    for _ in range(CONNS):
        s = socket.create_connection(("127.0.0.1", port))
        if SEQUENTIAL:
            s.sendall(header)
            for _ in range(PER):
                s.sendall(REQ)
                d = b""
                while not d.endswith(b"Hello, world!"):
                    d += s.recv(65536)
            s.close()
            continue
        s.sendall(header + batch)
        got = 0
        while got < PER:
            d = s.recv(1 << 20)
            if not d: raise RuntimeError("closed")
            got += d.count(b"HTTP/1.1 200")
        s.close()

res = {}
for name, args, header in [("off", [], b""), ("on, v1", ["--proxy-protocol", "--trusted-proxy", "127.0.0.1"], V1),
                           ("on, v2", ["--proxy-protocol", "--trusted-proxy", "127.0.0.1"], V2)]:
    p, port = start(args)
    load(port, header)  # warm up
    best = None
    for _ in range(ROUNDS):
        c0 = cpu(p.pid); load(port, header); c1 = cpu(p.pid)
        us = (c1 - c0) / (PER * CONNS) * 1e6
        best = us if best is None else min(best, us)
    p.terminate(); p.wait()
    res[name] = best
    print("%-8s %6.2f us server CPU per request (%d req/conn, %d conns, best of %d)" % (name, best, PER, CONNS, ROUNDS))
