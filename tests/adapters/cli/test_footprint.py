"""What a `csgi serve` process carries while it waits: no iostreams (their static initialisation alone maps
about half a megabyte of libstdc++ into the process), and the optional parts (libpython, libsystemd, the TLS
module with OpenSSL) mapped only when their option or environment asks for them."""
import os
import subprocess
import sys
import urllib.request

from serving import check, failures, start

csgi = sys.argv[1]
programs = [csgi] + [a for a in sys.argv[2:] if os.path.isfile(a)]

for program in programs:
    imported = subprocess.run(["nm", "-D", "--undefined-only", program], capture_output=True, text=True).stdout
    check("ios_base4Init" not in imported, "%s does not initialise iostreams" % os.path.basename(program))

os.environ.pop("NOTIFY_SOCKET", None)
p, port = start(csgi, ["--demo", "--threads", "1"])
try:
    with urllib.request.urlopen("http://127.0.0.1:%d/hello" % port, timeout=10) as r:
        check(r.status == 200, "the server answers /hello")
    with open("/proc/%d/maps" % p.pid) as f:
        maps = f.read()
    for part in ["libpython", "libsystemd", "libssl", "libcrypto", "libcsgi_tls", "libcsgi_python"]:
        check(part not in maps, "a plain HTTP server without systemd has no %s mapped" % part)
    with open("/proc/%d/status" % p.pid) as f:
        rss = next(line for line in f if line.startswith("VmRSS:"))
    print("idle " + rss.strip())
finally:
    p.terminate()
    p.wait(timeout=10)

if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
