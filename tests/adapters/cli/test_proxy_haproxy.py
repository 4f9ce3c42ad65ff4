#!/usr/bin/python3
"""`csgi serve --proxy-protocol --trusted-proxy 127.0.0.1/32` behind a real HAProxy (tcp mode), started from
a temporary config on free ports:
  * send-proxy-v2 (with proxy-v2-options crc32c, and health checks with check-send-proxy): the app sees the
    client's address (the client binds 127.0.0.3) and port, and SERVER_PORT is HAProxy's frontend port;
  * send-proxy-v2-ssl behind a TLS frontend that HAProxy terminates: csgi.url_scheme https, HTTPS on;
  * send-proxy (v1): the same address and port;
  * no connection is refused (HAProxy's health checks included), and the access log shows the clients.
Skipped (exit 0 with a note) when haproxy or openssl is missing.
Usage: test_proxy_haproxy.py CSGI_EXE"""
import html
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

CSGI = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving import check, failures, free_port, start, wait_port  # noqa: E402
from fetch import fetch  # noqa: E402  (serving.py puts tests/ on sys.path)

CLIENT = "127.0.0.3"  # not HAProxy's own address (127.0.0.1): what the app sees can only come from the header

CONFIG = """
global
    maxconn 200
defaults
    mode tcp
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend v2
    bind 127.0.0.1:{v2}
    default_backend v2
frontend tls
    bind 127.0.0.1:{tls} ssl crt {pem}
    default_backend v2ssl
frontend v1
    bind 127.0.0.1:{v1}
    default_backend v1
backend v2
    server csgi 127.0.0.1:{csgi} send-proxy-v2 proxy-v2-options crc32c check inter 200ms check-send-proxy
backend v2ssl
    server csgi 127.0.0.1:{csgi} send-proxy-v2-ssl proxy-v2-options crc32c
backend v1
    server csgi 127.0.0.1:{csgi} send-proxy check inter 200ms check-send-proxy
"""


def get_env(port, tls=False):
    """GET /env through HAProxy from CLIENT; returns (env, the client's port)."""
    raw = socket.socket()
    raw.settimeout(10)
    raw.bind((CLIENT, 0))
    raw.connect(("127.0.0.1", port))
    client_port = raw.getsockname()[1]
    s = raw
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        s = ctx.wrap_socket(raw, server_hostname="localhost")
    data = fetch(port, "/env", sock=s)
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", data.decode(errors="replace"))
    return {html.unescape(k): html.unescape(v) for k, v in rows}, client_port


def main():
    if not shutil.which("haproxy") or not shutil.which("openssl"):
        print("skip: haproxy or openssl is not installed")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        key, cert, pem = (os.path.join(tmp, n) for n in ("key.pem", "cert.pem", "both.pem"))
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-subj", "/CN=localhost", "-days", "1"], check=True, capture_output=True, timeout=60)
        with open(pem, "w") as f:
            f.write(open(cert).read() + open(key).read())
        err, acc = os.path.join(tmp, "error.log"), os.path.join(tmp, "access.log")
        csgi, csgi_port = start(CSGI, ["--demo", "--proxy-protocol", "--trusted-proxy", "127.0.0.1/32",
                                       "--error-log", err, "--access-log", acc])
        ports = {"v2": free_port(), "tls": free_port(), "v1": free_port()}
        cfg = os.path.join(tmp, "haproxy.cfg")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(csgi=csgi_port, pem=pem, **ports))
        hap = subprocess.Popen(["haproxy", "-db", "-f", cfg], stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "haproxy.log"), "w"))
        try:
            check(all(wait_port(p) for p in ports.values()), "haproxy listens")
            time.sleep(0.5)  # a few health checks (check-send-proxy) reach csgi

            env, client_port = get_env(ports["v2"])
            check(env.get("REMOTE_ADDR") == CLIENT and env.get("REMOTE_PORT") == str(client_port),
                  "send-proxy-v2: the client's address and port (%s:%s, want %s:%d)" %
                  (env.get("REMOTE_ADDR"), env.get("REMOTE_PORT"), CLIENT, client_port))
            check(env.get("SERVER_PORT") == str(ports["v2"]), "send-proxy-v2: SERVER_PORT is HAProxy's frontend port")
            check(env.get("csgi.url_scheme") == "http" and "HTTPS" not in env, "send-proxy-v2: plain http")

            env, client_port = get_env(ports["tls"], tls=True)
            check(env.get("REMOTE_ADDR") == CLIENT and env.get("REMOTE_PORT") == str(client_port),
                  "send-proxy-v2-ssl: the client's address and port")
            check(env.get("csgi.url_scheme") == "https" and env.get("HTTPS") == "on",
                  "send-proxy-v2-ssl: https (%s, HTTPS=%s)" % (env.get("csgi.url_scheme"), env.get("HTTPS")))
            check(env.get("SERVER_PORT") == str(ports["tls"]), "send-proxy-v2-ssl: SERVER_PORT is the TLS frontend's")

            env, client_port = get_env(ports["v1"])
            check(env.get("REMOTE_ADDR") == CLIENT and env.get("REMOTE_PORT") == str(client_port),
                  "send-proxy (v1): the client's address and port (%s:%s)" % (env.get("REMOTE_ADDR"), env.get("REMOTE_PORT")))
            check(env.get("SERVER_PORT") == str(ports["v1"]), "send-proxy (v1): SERVER_PORT is HAProxy's frontend port")
        finally:
            hap.terminate()
            hap.wait(timeout=10)
            csgi.terminate()
            csgi.wait(timeout=15)
        errors = [l for l in open(err).read().splitlines() if "PROXY" in l] if os.path.exists(err) else []
        check(not errors, "no connection refused, health checks included: %r" % errors[:3])
        lines = open(acc).read().splitlines()
        check(len(lines) == 3 and all(l.startswith(CLIENT + " ") for l in lines),
              "the access log shows the client for each request: %r" % [l.split(" ")[0] for l in lines])
    print("%d failed" % len(failures))
    return 1 if failures else 0


sys.exit(main())
