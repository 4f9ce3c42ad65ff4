"""What the cli socket tests share: a pass/fail checklist and `csgi serve` started on a free port."""
import re
import subprocess
import time

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def start(csgi, args, listen="127.0.0.1:0", stderr=subprocess.DEVNULL):
    """Starts `csgi serve ARGS --listen LISTEN`; returns (process, port) once it listens (http or https)."""
    p = subprocess.Popen([csgi, "serve"] + args + ["--listen", listen], stdout=subprocess.PIPE,
                         stderr=stderr, text=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        line = p.stdout.readline()
        m = re.search(r"listening on https?://127\.0\.0\.1:(\d+)/", line)
        if m:
            return p, int(m.group(1))
    p.kill()
    raise RuntimeError("csgi did not start")
