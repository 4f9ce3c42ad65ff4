#!/usr/bin/python3
"""testssl.sh (Debian's `testssl`) against `csgi serve --tls-cert/--tls-key`, with certificates made now:
protocols (-p), cipher categories (-s) and vulnerabilities (-U). Fails when a protocol below TLS 1.2 is
offered, TLS 1.2 or 1.3 is not, or testssl reports anything VULNERABLE or "NOT ok". Exit 77 (skipped)
without testssl.
Usage: test_testssl.py CSGI_EXE"""
import os
import re
import shutil
import subprocess
import sys

CSGI = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving import check, failures, start  # noqa: E402
from tls_certs import Certs  # noqa: E402

testssl = shutil.which("testssl") or shutil.which("testssl.sh")
if not testssl:
    print("SKIP: testssl not installed")
    sys.exit(77)
certs = Certs()
p, port = start(CSGI, ["--demo", "--tls-cert", certs.server[0], "--tls-key", certs.server[1]],
                listen="https://127.0.0.1:0")
try:
    r = subprocess.run([testssl, "--quiet", "--color", "0", "--warnings", "off", "-p", "-s", "-U",
                        "https://127.0.0.1:%d" % port], capture_output=True, text=True, timeout=300)
    out = r.stdout
    print(out)
    for old in ("SSLv2", "SSLv3", "TLS 1 ", "TLS 1.1"):
        line = next((l for l in out.splitlines() if l.strip().startswith(old.strip() + " ") or l.startswith(" " + old)), "")
        check("not offered" in line, "%s not offered (%r)" % (old.strip(), line.strip()))
    for new in ("TLS 1.2", "TLS 1.3"):
        check(re.search(r"^ %s\s+offered" % re.escape(new), out, re.M) is not None, "%s offered" % new)
    bad = [l.strip() for l in out.splitlines() if "VULNERABLE" in l or "NOT ok" in l]
    check(not bad, "no vulnerability and no weak protocol or cipher reported: %r" % bad)
    check("Strong encryption (AEAD ciphers)" in out and "offered (OK)" in out, "AEAD ciphers offered")
finally:
    p.terminate()
    p.wait(timeout=15)
    shutil.rmtree(certs.dir, ignore_errors=True)
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
