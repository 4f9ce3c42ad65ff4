#!/usr/bin/python3
"""`csgi serve --wsgi` installed into a temporary prefix imports the csgi Python package installed beside it,
and, embedding Python (CSGI_PYTHON_EMBED=1), loads the Python host module (libcsgi_python_host.so) from
there, not the build tree's whose path is compiled in; run by the Python program (the default), it
imports the same package and maps no host module. The program in the build tree still uses the build
tree's; CSGI_PYTHON_DIR overrides both. Where an unprivileged mount namespace is available, the installed
program is also run with the build tree hidden under an empty tmpfs, so the compiled-in path cannot work.

Usage: test_installed_wsgi.py BUILD_DIR WORK_DIR BUILD_CSGI BUILD_PYTHON_DIR"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

BUILD, WORK, BUILD_CSGI, BUILD_PY = (os.path.realpath(a) for a in sys.argv[1:5])
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


APP = '''
import csgi, csgi._csgi
def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    with open("/proc/self/maps") as f:
        host = sorted({l.split(None, 5)[-1].strip() for l in f if "libcsgi_python_host.so" in l})
    return [";".join([csgi._csgi.__file__] + host).encode()]
'''


def served_package(argv, env, cwd=WORK):
    """Starts `argv` (a csgi serve --wsgi command), asks it once, stops it; the csgi._csgi file it imported,
    or an error. Also an error unless it runs exactly one host module, the one in that package directory,
    when it embeds Python, and none when the Python program runs it."""
    embedded = bool(env.get("CSGI_PYTHON_EMBED"))
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        deadline = time.time() + 20
        out = []
        while time.time() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            out.append(line)
            m = re.search(r"listening on http://([\d.]+):(\d+)/", line)
            if m:
                s = socket.create_connection((m.group(1), int(m.group(2))), timeout=10)
                s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                data = b""
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    data += d
                s.close()
                head, _, body = data.partition(b"\r\n\r\n")
                if not head.startswith(b"HTTP/1.1 200"):
                    return "error: " + data.decode()
                files = [os.path.realpath(f) for f in body.decode().split(";")]
                if not embedded and len(files) != 1:
                    return "error: a host module in the Python program: " + body.decode()
                if embedded and (len(files) != 2 or os.path.dirname(files[1]) != os.path.dirname(files[0])):
                    return "error: the host module is not the one beside the package: " + body.decode()
                return files[0]
        return "did not start: " + "".join(out)
    finally:
        os.killpg(p.pid, 15)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
with open(os.path.join(WORK, "where_app.py"), "w") as f:
    f.write(APP)
prefix = os.path.join(WORK, "prefix")
subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], check=True, stdout=subprocess.DEVNULL)
installed = os.path.join(prefix, "bin", "csgi")
installed_pkg = os.path.realpath(os.path.join(prefix, "lib", "python3", "dist-packages", "csgi"))
check(os.path.isdir(installed_pkg), "the csgi package is installed under the prefix")

env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CSGI_PYTHON_DIR")}
serve = ["serve", "--wsgi", "where_app:application", "--listen", "127.0.0.1:0"]

for embed in ("1", ""):
    env = dict(env, CSGI_PYTHON_EMBED=embed)
    how = "embedded" if embed else "run by the Python program"
    got = served_package([installed] + serve, env)
    check(got.startswith(installed_pkg + os.sep), "%s: the installed csgi imports the installed package (%s)" % (how, got))

    got = served_package([BUILD_CSGI] + serve, env)
    check(got.startswith(os.path.join(BUILD_PY, "csgi") + os.sep),
          "%s: csgi in the build tree imports the build tree's package (%s)" % (how, got))

    got = served_package([installed] + serve, dict(env, CSGI_PYTHON_DIR=BUILD_PY))
    check(got.startswith(os.path.join(BUILD_PY, "csgi") + os.sep),
          "%s: CSGI_PYTHON_DIR overrides the installed package (%s)" % (how, got))
env = dict(env, CSGI_PYTHON_EMBED="1")

# The build tree hidden: the prefix moved out of it (a relocated install), the build tree under an empty
# tmpfs; what the installed program imports must not depend on the tree it was built in.
hide = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", 'mount -t tmpfs none "$0" && exec "$@"', BUILD]
probe = subprocess.run(hide + ["test", "!", "-e", BUILD_CSGI], capture_output=True) if shutil.which("unshare") else None
if probe is not None and probe.returncode == 0:
    with tempfile.TemporaryDirectory() as away:
        moved = os.path.join(away, "prefix")
        shutil.copytree(prefix, moved, symlinks=True)
        shutil.copy(os.path.join(WORK, "where_app.py"), away)
        moved_pkg = os.path.realpath(os.path.join(moved, "lib", "python3", "dist-packages", "csgi"))
        got = served_package(hide + [os.path.join(moved, "bin", "csgi")] + serve, env, cwd=away)
        check(got.startswith(moved_pkg + os.sep),
              "a relocated prefix, the build tree hidden: csgi imports the package beside it (%s)" % got)
else:
    print("skip the hidden-build-tree run: no unprivileged mount namespace here (%s)" %
          (probe.stderr.decode().strip() if probe is not None else "no unshare"))

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
