#!/usr/bin/python3
"""`csgi serve --reload`, without --workers and with --workers 2:
  * a new app library renamed over the served one (as a build that writes elsewhere and renames does) is
    served within seconds; no request fails while the workers are replaced;
  * a broken file renamed over it (dlopen fails) leaves the old workers serving, and the error log says
    why (the loader's message) and that the old workers keep serving; the next good build is picked up;
  * with --wsgi, an edited module is served after the change, and one that no longer imports (a syntax
    error) leaves the old workers serving with the Python error in the log (skipped, with the reason, when
    this csgi has no --wsgi or its Python host module is not built).
Usage: test_reload.py CSGI_EXE APP_SO APP_AGAIN_SO"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe import check, failures, get_ok  # noqa: E402,F401

CSGI, APP, APP_AGAIN = (os.path.abspath(a) for a in sys.argv[1:4])


def get(port, path="/hello"):
    return get_ok(port, path)


def replace(dst, src=None, text=None):
    """Puts a new file at dst by rename, as a build does; from a copy of src or with `text`."""
    tmp = dst + ".part"
    if src:
        shutil.copy(src, tmp)
    else:
        with open(tmp, "w") as f:
            f.write(text)
    os.rename(tmp, dst)


def wait_for(cond, seconds=15):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if cond():
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


class Load:
    """Two client threads sending GET /hello in a loop, counting failures."""

    def __init__(self, port):
        self.port, self.ok, self.failed, self.errors, self.stop = port, 0, 0, [], False
        self.threads = [threading.Thread(target=self.run) for _ in range(2)]
        for t in self.threads:
            t.start()

    def run(self):
        deadline = time.time() + 60
        while not self.stop and time.time() < deadline:
            try:
                get(self.port)
                self.ok += 1
            except OSError as e:
                self.failed += 1
                self.errors.append(str(e))
            time.sleep(0.005)

    def finish(self):
        self.stop = True
        for t in self.threads:
            t.join()


def start(tmp, args, cwd=None):
    errlog = os.path.join(tmp, "errors.log")
    open(errlog, "w").close()
    stderr = open(os.path.join(tmp, "stderr.log"), "w")  # where Python prints a traceback itself
    p = subprocess.Popen([CSGI, "serve"] + args + ["--reload", "--listen", "127.0.0.1:0", "--error-log", errlog],
                         stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True, cwd=cwd)
    stderr.close()
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", p.stdout.readline())
    return p, int(m.group(1)), errlog


def stop(p):
    os.killpg(p.pid, signal.SIGTERM)
    try:
        return p.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        return None


def library(workers):
    label = "--workers %d" % workers if workers else "no --workers"
    with tempfile.TemporaryDirectory() as tmp:
        lib = os.path.join(tmp, "libapp.so")
        shutil.copy(APP, lib)
        p, port, errlog = start(tmp, ["--app", lib] + (["--workers", str(workers)] if workers else []))
        try:
            check(wait_for(lambda: get(port) == "hello"), "%s: the first library answers" % label)
            load = Load(port)
            replace(lib, APP_AGAIN)
            check(wait_for(lambda: get(port) == "hello again"), "%s: a library renamed over it is served" % label)
            time.sleep(0.3)
            load.finish()
            check(load.failed == 0 and load.ok > 0,
                  "%s: no request failed across the reload (%d answered, %s)" % (label, load.ok, load.errors[:2]))
            replace(lib, text="this is not a shared library\n")
            broken = wait_for(lambda: "old workers keep serving" in open(errlog).read())
            log = open(errlog).read()
            check(broken and "cannot load app library" in log,
                  "%s: a broken library: the reason and 'the old workers keep serving' in the log" % label)
            check(all(get(port) == "hello again" for _ in range(10)), "%s: the old workers keep serving" % label)
            replace(lib, APP)
            check(wait_for(lambda: get(port) == "hello"), "%s: the next good build is served" % label)
            check(stop(p) == 0, "%s: SIGTERM stops it (exit 0)" % label)
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the workers too, were the master gone
            except ProcessLookupError:
                pass
            if failures:
                print("error log:\n" + open(errlog).read())


WSGI_V1 = '''def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"%s"]
'''


def wsgi():
    with tempfile.TemporaryDirectory() as tmp:
        module = os.path.join(tmp, "reloadapp.py")
        with open(module, "w") as f:
            f.write(WSGI_V1 % "v1")
        p, port, errlog = start(tmp, ["--wsgi", "reloadapp:application"], cwd=tmp)
        try:
            if not check(wait_for(lambda: get(port) == "v1", 20), "--wsgi: the module answers"):
                return
            replace(module, text=WSGI_V1 % "v2")
            check(wait_for(lambda: get(port) == "v2", 20), "--wsgi: the edited module is served")
            replace(module, text="def application(environ, start_response)\n")  # no colon: SyntaxError
            broken = wait_for(lambda: "old workers keep serving" in open(errlog).read(), 20)
            log = open(errlog).read() + open(os.path.join(tmp, "stderr.log")).read()
            check(broken and "SyntaxError" in log, "--wsgi: the import error is printed (%s)" % log.strip().splitlines()[-3:])
            check(get(port) == "v2", "--wsgi: the old workers keep serving")
            check(stop(p) == 0, "--wsgi: SIGTERM stops it (exit 0)")
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the workers too, were the master gone
            except ProcessLookupError:
                pass


library(0)
library(2)
if "--wsgi" in subprocess.run([CSGI, "--help"], capture_output=True, text=True).stdout:
    wsgi()
else:
    print("skip --wsgi: this csgi was built without Python embedding")

# A source with nothing to watch is a usage error.
r = subprocess.run([CSGI, "serve", "--demo", "--reload"], capture_output=True, text=True, timeout=30)
check(r.returncode == 2 and "--reload" in r.stderr, "--reload with --demo: exit 2 with the reason (%r)" % r.stderr.strip())

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
