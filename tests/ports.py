"""free_port(): a free TCP port below 32768, outside the kernel's ephemeral range (clients draw their
ports there), for a server that cannot take port 0 and report the one it got. Shared by the Python tests
(the cli, bindings and reliability suites put this directory on sys.path)."""
import os
import socket


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
