"""start_redis(): a redis-server on loopback from its own temporary config (no persistence), for the Python
tests that need one; stop it with ports.stop_group()."""
import os
import subprocess

from ports import free_port, stop_group, wait_port

REDIS_SERVER = "/usr/bin/redis-server"


def start_redis(tmp, port=None, addr="127.0.0.1", netns=None, password=None):
    """A redis-server on `addr`:`port` (a free port when None; in network namespace `netns`; with
    `password`, clients must AUTH), its files in `tmp`: (process, port)."""
    port = port or free_port()
    conf = os.path.join(tmp, "redis.conf")
    with open(conf, "w") as f:
        f.write('port %d\nbind %s\nprotected-mode yes\nsave ""\nappendonly no\ndaemonize no\ndir %s\nlogfile ""\n'
                % (port, addr, tmp))
        if password:
            f.write("requirepass %s\n" % password)
    argv = (["ip", "netns", "exec", netns] if netns else []) + [REDIS_SERVER, conf]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, start_new_session=True)
    if not wait_port(port, addr):
        stop_group(p)
        raise SystemExit("redis-server did not start")
    return p, port
