"""`csgi serve --bundle DIR --bundle-esbuild PATH` on a real socket: the program named transforms the
TypeScript modules (a missing one is a 422 naming it, other modules still served; the bundler alone
answers every path); --bundle-esbuild without --bundle is a usage error.
    test_bundle.py <csgi>"""
import os
import socket
import subprocess
import sys
import tempfile

from serving import check, exchange, failures, start

CSGI = sys.argv[1]

with tempfile.TemporaryDirectory() as root:
    with open(os.path.join(root, "main.ts"), "w") as f:
        f.write("export const n: number = 1;\n")
    with open(os.path.join(root, "plain.js"), "w") as f:
        f.write("module.exports = 2;\n")
    missing = os.path.join(root, "no-such-esbuild")
    p, port = start(CSGI, ["--bundle", root, "--bundle-esbuild", missing])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            status, _, body = exchange(s, "/main.ts")
            check(status == 422 and "main.ts: cannot run " + missing in body,
                  "a .ts module goes to the program --bundle-esbuild names: %d %s" % (status, body[:200]))
            status, _, body = exchange(s, "/plain.js")
            check(status == 200 and "module.exports = 2" in body, "other modules are still served (%d)" % status)
    finally:
        p.terminate()
        p.wait(timeout=10)

    r = subprocess.run([CSGI, "serve", "--static", root, "--bundle-esbuild", missing], capture_output=True, text=True,
                       timeout=10)
    check(r.returncode == 2 and "--bundle-esbuild applies with --bundle" in r.stderr,
          "--bundle-esbuild without --bundle: %r" % r.stderr.strip())

sys.exit(1 if failures else 0)
