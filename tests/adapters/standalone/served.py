"""What the HTTP/2 socket tests share: a `csgi serve` process on a port it picks itself, and the
ok/FAIL check lines with the list of failures the test's exit status comes from."""
import atexit
import os
import re
import signal
import subprocess
import time

failures = []
_started = []


@atexit.register
def _kill_left():
    """A test that ends on an exception leaves no server behind."""
    for p in _started:
        if p.poll() is None:
            p.kill()
            p.wait()


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def sanitized(program):
    """True when `program` is built with AddressSanitizer or ThreadSanitizer: their allocators keep freed
    memory (ASan's quarantine) and add shadow memory, so the process's RSS says nothing of what the
    server itself holds."""
    with open(program, "rb") as f:
        image = f.read()
    return b"__asan_init" in image or b"__tsan_init" in image


class Server:
    """`argv` (the csgi program and its arguments) run with `--listen LISTEN`; the port is read from the
    program's "listening on" line. `sanitized`: see sanitized()."""

    def __init__(self, argv, listen="127.0.0.1:0"):
        self.sanitized = sanitized(argv[0])
        self.p = subprocess.Popen(argv + ["--listen", listen], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        _started.append(self.p)
        deadline = time.time() + 10
        while time.time() < deadline:
            m = re.search(r"listening on https?://127\.0\.0\.1:(\d+)/", self.p.stdout.readline())
            if m:
                self.port = int(m.group(1))
                return
        self.p.kill()
        raise RuntimeError("csgi did not start")

    def cpu(self):
        """utime + stime of the server, in seconds."""
        with open("/proc/%d/stat" % self.p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self):
        with open("/proc/%d/status" % self.p.pid) as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024

    def stop(self, timeout=15):
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return None
