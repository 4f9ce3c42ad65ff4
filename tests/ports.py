"""free_port(): a free TCP port below 32768, outside the kernel's ephemeral range (clients draw their
ports there), for a server that cannot take port 0 and report the one it got; wait_port(): until a server
accepts on a port; stop_group(): stops a server started in a session of its own. Shared by the Python tests (the cli, bindings and reliability suites put this directory
on sys.path)."""
import os
import signal
import socket
import subprocess
import time


def free_port(host="127.0.0.1"):
    for _ in range(500):
        port = 20000 + int.from_bytes(os.urandom(2), "big") % 12768
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below 32768")


def wait_port(port, host="127.0.0.1", timeout=10.0):
    """True once a connection to host:port is accepted, False when `timeout` seconds pass first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def stop_group(p, wait=10):
    """SIGTERM to the process group of `p` (started with start_new_session=True), SIGKILL past `wait` seconds;
    the exit status, or None when it had to be killed."""
    os.killpg(p.pid, signal.SIGTERM)
    try:
        return p.wait(wait)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return None
