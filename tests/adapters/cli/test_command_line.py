#!/usr/bin/python3
"""The `csgi` program's command line and its messages, on the real binary:
- command-line errors exit 2 (docs: EXIT STATUS), and are found before the app's factory runs;
- --version prints the CMake project's version; an unknown option gets the nearest known one;
- an exception from an --app library's factory names the library and says its factory threw;
- `csgi serve --fastcgi --listen` prints a "listening" line (the socket's mode, and --socket-mode when only
  its owner may connect);
- a request the app failed is logged in one format by the HTTP server and under CGI;
- SIGTERM, SIGHUP and SIGUSR1 each log what the server does, in one process and under a master.
Usage: test_command_line.py CSGI_EXE PROCESS_APP_SO SOURCE_DIR"""
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving import check, exchange, failures, free_port, start  # noqa: E402

CSGI, APP, SOURCE = (os.path.abspath(a) for a in sys.argv[1:4])
work = tempfile.mkdtemp(prefix="csgi-cli-")


def run(*args):
    """The program's exit status (None when it still ran after 30 s: it started serving), stdout, stderr."""
    env = {k: v for k, v in os.environ.items() if k not in ("CSGI_APP", "GATEWAY_INTERFACE")}
    try:
        return subprocess.run([CSGI] + list(args), capture_output=True, text=True, timeout=30, env=env,
                              stdin=subprocess.DEVNULL, cwd=work)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(e.cmd, None, "", "")


# --version: the CMake project's version, one source.
with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
    version = re.search(r"project\(csgi VERSION ([\d.]+)", f.read()).group(1)
for args in (["--version"], ["serve", "--version"], ["version"]):
    r = run(*args)
    check(r.returncode == 0 and r.stdout == "csgi %s (spec 1.0)\n" % version,
          "csgi %s prints the version %s: %r %r" % (" ".join(args), version, r.stdout, r.stderr))

# Command-line errors exit 2, checked before the factory runs (the factory here throws: its message must
# not appear).
throwing = ["serve", "--app", APP, "--app-arg", "throw"]
for what, args, expected in [
    ("a port out of range", throwing + ["--listen", "127.0.0.1:99999"], "bad port"),
    ("a malformed address", throwing + ["--listen", "::1:80"], "brackets"),
    ("a --tls-cert without --tls-key", throwing + ["--tls-cert", "cert.pem"], "no --tls-key"),
    ("a --tls-key without --tls-cert", throwing + ["--tls-key", "key.pem"], "no --tls-cert"),
    ("a misspelt option", throwing + ["--wrokers", "2"], "did you mean --workers?"),
    ("a misspelt switch", ["serve", "--demo", "--reuseprot"], "did you mean --reuseport?"),
    ("a misspelt mode", ["serve", "--dmeo"], "did you mean --demo?"),
]:
    r = run(*args)
    check(r.returncode == 2 and expected in r.stderr and "factory" not in r.stderr and len(r.stderr.splitlines()) == 1,
          "%s exits 2 before the factory runs, saying %r: exit %d, %r" % (what, expected, r.returncode, r.stderr.strip()))
r = run("serve", "--demo", "--zzzzzzzz")
check(r.returncode == 2 and "did you mean" not in r.stderr, "no suggestion for a word unlike any option: %r" % r.stderr.strip())

# The factory's exception: named as such, with the library.
r = run(*throwing, "--listen", "127.0.0.1:0")
check(r.returncode == 1 and APP in r.stderr and "factory" in r.stderr and "threw" in r.stderr and
      "need a config file" in r.stderr, "a throwing factory is named with its library: %r" % r.stderr.strip())


def read_line(proc, pattern, limit=10):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not select.select([proc.stdout], [], [], 0.2)[0]:
            continue
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(pattern, line)
        if m:
            return m
    return None


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# FastCGI prints where it listens, as HTTP does.
os.umask(0o022)
for mode, expected_mode, hint in [(None, "0755", True), ("0660", "0660", False)]:
    sock = os.path.join(work, "fcgi-%s.sock" % (mode or "default"))
    args = ["serve", "--fastcgi", "--demo", "--listen", "unix:" + sock] + (["--socket-mode", mode] if mode else [])
    p = subprocess.Popen([CSGI] + args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    m = read_line(p, r"csgi: listening on unix:(\S+) \(FastCGI, socket mode (\d+)(.*)\)")
    check(m is not None and m.group(1) == sock and m.group(2) == expected_mode and ("--socket-mode" in m.group(3)) == hint,
          "csgi serve --fastcgi %s prints its socket and mode %s%s: %s" %
          (" ".join(args[3:]), expected_mode, " with the --socket-mode hint" if hint else "", m and m.group(0)))
    stop(p)
port = free_port()
p = subprocess.Popen([CSGI, "serve", "--fastcgi", "--demo", "--listen", "127.0.0.1:%d" % port], stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, text=True)
m = read_line(p, r"csgi: listening on 127\.0\.0\.1:(\d+) \(FastCGI\)")
check(m is not None and int(m.group(1)) == port, "csgi serve --fastcgi --listen 127.0.0.1:PORT prints its address")
stop(p)
r = run("serve", "--fastcgi", "--demo", "--listen", "127.0.0.1:0")
check(r.returncode == 1 and "127.0.0.1:0" in r.stderr and not os.path.exists(os.path.join(work, "127.0.0.1:0")),
      "FastCGI refuses port 0 (libfcgi would make a unix socket of that name): %r" % r.stderr.strip())


# One format for a request the app failed, in every adapter: the HTTP server (HTTP/2 calls the app through
# the same function) and CGI (whose call FastCGI shares).
failed_line = 'csgi: 500 for "GET /throw?x=1 HTTP/1.1": the app raised: thrown by the app'
log = os.path.join(work, "app-errors.log")
p, port = start(CSGI, ["--app", APP, "--error-log", log])
with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
    status, _, _ = exchange(s, "/throw?x=1", close=True)
stop(p)
with open(log) as f:
    logged = f.read()
check(status == 500 and failed_line + "\n" in logged, "HTTP logs the failed request as %r: %r" % (failed_line, logged))
cgi_env = dict(os.environ, GATEWAY_INTERFACE="CGI/1.1", REQUEST_METHOD="GET", REQUEST_URI="/throw?x=1",
               SCRIPT_NAME="", PATH_INFO="/throw", QUERY_STRING="x=1", SERVER_PROTOCOL="HTTP/1.1",
               SERVER_NAME="localhost", SERVER_PORT="80", REMOTE_ADDR="127.0.0.1")
cgi_env.pop("CSGI_APP", None)
r = subprocess.run([CSGI, "serve", "--cgi", "--app", APP], env=cgi_env, capture_output=True, text=True, timeout=30,
                   stdin=subprocess.DEVNULL, cwd=work)
check(r.stdout.startswith("Status: 500") and failed_line + "\n" in r.stderr,
      "CGI logs the failed request as HTTP does: %r" % r.stderr)


# Signals are logged.
def wait_for(path, text, limit=10):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with open(path) as f:
            if text in f.read():
                return True
        time.sleep(0.05)
    return False


for extra in ([], ["--workers", "2"]):
    log = os.path.join(work, "errors-%d.log" % len(extra))
    open(log, "w").close()
    p, port = start(CSGI, ["--demo", "--error-log", log] + extra)
    p.send_signal(signal.SIGUSR1)
    check(wait_for(log, "csgi: SIGUSR1: reopened the log files"), "SIGUSR1 is logged %s" % extra)
    p.send_signal(signal.SIGHUP)
    hup = "csgi: SIGHUP: started 2 new workers" if extra else "csgi: SIGHUP: reopened the log files"
    check(wait_for(log, hup), "SIGHUP is logged %s: %r" % (extra, hup))
    p.send_signal(signal.SIGTERM)
    check(wait_for(log, "csgi: SIGTERM: stopping gracefully"), "SIGTERM is logged %s" % extra)
    p.wait(timeout=20)
    with open(log) as f:
        check(f.read().count("SIGTERM") == 1, "one SIGTERM line %s, not one per worker" % extra)

# FastCGI logs them too (on stderr), once under a master.
for extra in ([], ["--workers", "2"]):
    sock = os.path.join(work, "fcgi-signals-%d.sock" % len(extra))
    p = subprocess.Popen([CSGI, "serve", "--fastcgi", "--demo", "--listen", "unix:" + sock] + extra,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    listening = read_line(p, r"csgi: listening on unix:")
    p.send_signal(signal.SIGUSR1)
    err, deadline = "", time.monotonic() + 10
    while "SIGUSR1" not in err and time.monotonic() < deadline:
        if select.select([p.stderr], [], [], 0.2)[0]:
            line = p.stderr.readline()
            if not line:
                break
            err += line
    p.send_signal(signal.SIGTERM)
    try:
        err += p.communicate(timeout=20)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        err += p.communicate()[1]
    check(listening is not None and err.count("csgi fastcgi: SIGUSR1: reopened the log files") == 1 and
          err.count("csgi fastcgi: SIGTERM: stopping gracefully") == 1,
          "FastCGI %s logs SIGUSR1 and SIGTERM once each: %r" % (extra, err))

sys.exit(1 if failures else 0)
