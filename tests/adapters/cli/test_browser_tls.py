#!/usr/bin/python3
"""Headless Chromium loads `csgi serve --demo` over https://, trusting the test CA (an NSS database in a
temporary HOME, made with certutil from libnss3-tools): the demo page, a page that reports the
navigation's protocol (h2: the browser and the server chose HTTP/2 by ALPN) and secure context, a page
whose WebSocket echo round-trips over wss:// (on the page's HTTP/2 connection: an RFC 8441 extended CONNECT,
which the access log has as "GET /websocket/echo HTTP/2" 200), and /env with the TLS keys (SERVER_PROTOCOL
HTTP/2); then the same page and /env over HTTP/3 (QUIC, `--http3`). Without the CA the page does not load (the control). Exit 77 (skipped) without chromium or certutil.
Usage: test_browser_tls.py CSGI_EXE"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

CSGI = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving import check, failures, start  # noqa: E402
from tls_certs import Certs  # noqa: E402

chromium = shutil.which("chromium") or shutil.which("chromium-browser")
certutil = shutil.which("certutil")
if not chromium or not certutil:
    print("SKIP: chromium or certutil (libnss3-tools) not installed")
    sys.exit(77)

work = tempfile.mkdtemp(prefix="csgi-browser-tls-")
os.mkdir(os.path.join(work, "certs"))
certs = Certs(os.path.join(work, "certs"))
site = os.path.join(work, "site")
os.mkdir(site)
with open(os.path.join(site, "probe.html"), "w") as f:
    f.write('<!doctype html><meta charset=utf-8><title>probe</title><p id=out>pending</p><script>'
            'const nav = performance.getEntriesByType("navigation")[0];'
            'document.getElementById("out").textContent = "protocol=" + nav.nextHopProtocol + '
            '" secure=" + window.isSecureContext;</script>')
with open(os.path.join(site, "wsprobe.html"), "w") as f:
    f.write('<!doctype html><meta charset=utf-8><title>wss</title><p id=ws>pending</p><script>'
            'const u = new URL("websocket/echo", location.href); u.protocol = "wss:";'
            'const s = new WebSocket(u); s.onopen = () => s.send("round trip over wss");'
            's.onmessage = (e) => { document.getElementById("ws").textContent = "echo=" + e.data; s.close(); };'
            's.onerror = () => { document.getElementById("ws").textContent = "error"; };</script>')
trusting = os.path.join(work, "home")
nssdb = os.path.join(trusting, ".pki", "nssdb")
os.makedirs(nssdb)
subprocess.run([certutil, "-d", "sql:" + nssdb, "-N", "--empty-password"], check=True)
subprocess.run([certutil, "-d", "sql:" + nssdb, "-A", "-n", "csgi test CA", "-t", "C,,", "-i", certs.ca], check=True)
untrusting = os.path.join(work, "home-untrusting")
os.mkdir(untrusting)


def dump(url, home, budget_ms=3000, flags=()):
    profile = tempfile.mkdtemp(dir=work)
    r = subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--user-data-dir=" + profile, "--virtual-time-budget=%d" % budget_ms, *flags, "--dump-dom", url],
                       capture_output=True, text=True, timeout=90, env=dict(os.environ, HOME=home))
    return r.stdout


def dump_page(url, home, flags=()):
    """The page's DOM once it has a body: on a loaded machine headless Chromium now and then dumps an
    empty document (its virtual clock ran out before the first byte); a bounded number of loads."""
    page = ""
    for _ in range(3):
        page = dump(url, home, flags=flags)
        if "<td>" in page:
            break
    return page


tls = ["--tls-cert", certs.server[0], "--tls-key", certs.server[1]]
p, port = start(CSGI, ["--demo"] + tls, listen="https://127.0.0.1:0")
q = None
try:
    log = os.path.join(work, "access.log")
    q, probe_port = start(CSGI, ["--demo", "--static", site, "--access-log", log, "--http3"] + tls,
                          listen="https://127.0.0.1:0")
    base = "https://localhost:%d" % port
    check("Hello from" not in dump(base + "/", untrusting), "without the test CA the page does not load")
    check("Hello from csgi!" in dump(base + "/", trusting), "the demo page loads over https")
    probe = dump("https://localhost:%d/probe.html" % probe_port, trusting)
    check("protocol=h2 secure=true" in probe, "nextHopProtocol h2 (HTTP/2 by ALPN) in a secure context: %r" %
          probe[probe.find("id=\"out\""):][:60])
    # Headless Chromium's virtual clock does not wait for a WebSocket as it waits for fetches: now and
    # then it dumps the page before the echo (seen with budgets of 3 and 10 s, while the server answers
    # in ~2 ms). A bounded number of page loads; each is a new connection and handshake.
    for _ in range(5):
        ws = dump("https://localhost:%d/wsprobe.html" % probe_port, trusting)
        if "id=\"ws\">pending" not in ws:
            break
    check("echo=round trip over wss" in ws,
          "a WebSocket echo round-trips over wss:// in the browser: %r" % ws[ws.find("id=\"ws\""):][:60])
    lines = []
    for _ in range(20):  # the line is written when the stream ends (bounded wait)
        with open(log) as f:
            lines = [line for line in f if "/websocket/echo" in line]
        if lines:
            break
        time.sleep(0.1)
    check(any('"GET /websocket/echo HTTP/2" 200 ' in line for line in lines),
          "the browser opened its WebSocket on the HTTP/2 connection (RFC 8441 extended CONNECT): %r" % lines[-1:])
    env = dump_page(base + "/env", trusting)
    check("<td>SSL_PROTOCOL</td><td>TLSv1.3</td>" in env, "the browser's request: SSL_PROTOCOL TLSv1.3: %r" % env[:300])
    check("<td>SSL_TLS_SNI</td><td>localhost</td>" in env, "the browser's request: SSL_TLS_SNI localhost")
    check("<td>csgi.url_scheme</td><td>https</td>" in env, "the browser's request: csgi.url_scheme https")
    check("<td>SERVER_PROTOCOL</td><td>HTTP/2</td>" in env, "the browser's request: SERVER_PROTOCOL HTTP/2")
    # HTTP/3: Chromium takes an Alt-Svc to QUIC only from certificates of the public roots, so it is told to
    # speak QUIC to this origin; "localhost" is mapped to the address the UDP socket is bound to (Chromium
    # does not fall back from ::1 for QUIC as it does for TCP).
    quic = ["--origin-to-force-quic-on=localhost:%d" % probe_port, "--host-resolver-rules=MAP localhost 127.0.0.1"]
    probe = dump("https://localhost:%d/probe.html" % probe_port, trusting, flags=quic)
    check("protocol=h3 secure=true" in probe, "nextHopProtocol h3 (HTTP/3 over QUIC) in a secure context: %r" %
          probe[probe.find("id=\"out\""):][:60])
    env = dump_page("https://localhost:%d/env" % probe_port, trusting, flags=quic)
    check("<td>SERVER_PROTOCOL</td><td>HTTP/3</td>" in env, "the browser's request: SERVER_PROTOCOL HTTP/3: %r" % env[:300])
    check("<td>SSL_TLS_SNI</td><td>localhost</td>" in env, "the browser's HTTP/3 request: SSL_TLS_SNI localhost")
    with open(log) as f:
        h3_lines = [line for line in f if '"GET /probe.html HTTP/3" 200 ' in line]
    check(len(h3_lines) == 1, "the access log has the page's request as HTTP/3: %r" % h3_lines)
finally:
    for server in (p, q):
        if server is None:
            continue
        server.terminate()
        server.wait(timeout=15)
    shutil.rmtree(work, ignore_errors=True)
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
