"""`make run`'s script, scripts/run-demo.sh BUILD_DIR, as the README's first command starts it (on a free
port through CSGI_DEMO_LISTEN instead of 5000): the demo page, /hello and a module bundle answer."""
import os
import subprocess
import sys
import time
import urllib.request

from serving import check, failures, free_port

root, build = sys.argv[1], sys.argv[2]
port = free_port()
env = dict(os.environ, CSGI_DEMO_LISTEN="127.0.0.1:%d" % port)
p = subprocess.Popen([os.path.join(root, "scripts", "run-demo.sh"), build], env=env, stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, text=True)
try:
    deadline = time.time() + 120  # the first run fetches ramda from npm for the page
    line = ""
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line or "listening on" in line:
            break
    check("listening on http://127.0.0.1:%d/" % port in line, "run-demo.sh starts csgi serve: %r" % line.strip())

    def get(path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
                return r.status, r.read()
        except OSError as e:
            return None, str(e).encode()

    status, body = get("/")
    check(status == 200 and b"<html" in body.lower(), "the demo page at / (%s)" % status)
    status, body = get("/hello")
    check(status == 200 and body.startswith(b"Hello"), "/hello (%s %r)" % (status, body[:40]))
    status, body = get("/bundle/require.js")
    check(status == 200 and len(body) > 1000, "the bundler's loader at /bundle/require.js (%s)" % status)
finally:
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
