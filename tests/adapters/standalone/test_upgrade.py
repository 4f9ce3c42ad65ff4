#!/usr/bin/python3
"""Zero-downtime binary upgrade: SIGUSR2 to the master of `csgi serve --workers 2` (a copy of the csgi binary
in a temporary directory, replaced by a new copy as an install would) while client threads send requests
on new connections. Checks: the new master (a child of the old one, started from the binary now at that
path) serves on the same socket, the old master exits 0, no request failed. Then a failed upgrade: the
binary replaced by a script that exits at once; SIGUSR2 leaves the running master serving, with the reason
in its error log. Usage: test_upgrade.py CSGI_EXE APP_SO"""
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

CSGI, APP = sys.argv[1], sys.argv[2]


def get(port, path="/pid"):
    return get_ok(port, path)


def parent_of(pid):
    """The parent of `pid`, or -1 when it is gone (an old worker may exit right after answering)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def install(src, dst):
    """Replaces dst by a copy of src the way an install does: a new file renamed over the old one."""
    shutil.copy(src, dst + ".new")
    os.chmod(dst + ".new", 0o755)
    os.rename(dst + ".new", dst)


def wait_for(cond, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


class Load:
    """Client threads, each sending GET /pid on a new connection in a loop, counting answers and failures."""

    def __init__(self, port, threads=4):
        self.port, self.ok, self.failed, self.errors = port, 0, 0, []
        self.stop = False
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run) for _ in range(threads)]
        for t in self.threads:
            t.start()

    def run(self):
        deadline = time.time() + 60  # bounded whatever happens
        while not self.stop and time.time() < deadline:
            try:
                get(self.port)
                with self.lock:
                    self.ok += 1
            except OSError as e:
                with self.lock:
                    self.failed += 1
                    self.errors.append(str(e))

    def finish(self):
        self.stop = True
        for t in self.threads:
            t.join()


with tempfile.TemporaryDirectory() as tmp:
    exe = os.path.join(tmp, "csgi")
    install(CSGI, exe)
    errlog = os.path.join(tmp, "errors.log")
    p = subprocess.Popen([exe, "serve", "--app", APP, "--workers", "2", "--listen", "127.0.0.1:0", "--error-log", errlog],
                         stdout=subprocess.PIPE, text=True, start_new_session=True)
    new_master = None
    try:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", p.stdout.readline())
        port = int(m.group(1))
        old_master = p.pid
        check(parent_of(int(get(port))) == old_master, "a worker of the first master answers")
        load = Load(port)
        time.sleep(0.5)
        install(CSGI, exe)  # the "new" binary at the same path
        os.kill(old_master, signal.SIGUSR2)
        seen = []  # the master of the worker that answered last; the old one's workers answer for a moment

        def new_master_answers():
            seen.append(parent_of(int(get(port))))
            return seen[-1] != old_master
        served_by_new = wait_for(new_master_answers, 20)
        new_master = seen[-1]
        check(served_by_new and new_master != old_master, "a worker of the new master %s answers" % new_master)
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, "the old master exits 0 (%s)" % rc)
        time.sleep(0.5)  # load on the new master alone
        load.finish()
        check(load.ok > 50 and load.failed == 0,
              "under load across the upgrade: %d requests answered, %d failed %s" % (load.ok, load.failed, load.errors[:3]))
        log = open(errlog).read()
        check("the new master %d is ready" % new_master in log, "the old master logged the handover")
        check(alive(new_master) and open("/proc/%d/cmdline" % new_master, "rb").read().split(b"\0")[0] == exe.encode(),
              "the new master runs the binary at the path the old one was started from")

        # A failed upgrade: the binary at that path exits at once.
        with open(exe + ".new", "w") as f:
            f.write("#!/bin/sh\necho 'new binary: cannot start' >&2\nexit 3\n")
        os.chmod(exe + ".new", 0o755)
        os.rename(exe + ".new", exe)
        load = Load(port, threads=2)
        os.kill(new_master, signal.SIGUSR2)
        failed = wait_for(lambda: "binary upgrade failed" in open(errlog).read(), 20)
        time.sleep(0.3)
        load.finish()
        log = open(errlog).read()
        check(failed and "exited with status 3" in log and "this master keeps serving" in log,
              "a failed upgrade is logged with the new process's status: %s" % log.strip().splitlines()[-1:])
        check(alive(new_master) and parent_of(int(get(port))) == new_master, "the running master keeps serving")
        check(load.ok > 10 and load.failed == 0, "and no request failed (%d answered, %d failed)" % (load.ok, load.failed))
        os.kill(new_master, signal.SIGTERM)
        check(wait_for(lambda: not alive(new_master), 30), "the new master stops on SIGTERM")
    finally:
        if failures:
            print("error log:\n" + open(errlog).read())
        # Every process of the test is in the first master's process group (the new master and the
        # workers of both, orphans included when a master died).
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
