"""start_redis(): a redis-server on loopback from its own temporary config (no persistence), for the Python
tests that need one; stop it with ports.stop_group()."""
import os
import subprocess

from ports import free_port, stop_group, wait_port

REDIS_SERVER = "/usr/bin/redis-server"


def start_redis(tmp, port=None):
    """A redis-server on 127.0.0.1:`port` (a free one when None), its files in `tmp`: (process, port)."""
    port = port or free_port()
    conf = os.path.join(tmp, "redis.conf")
    with open(conf, "w") as f:
        f.write('port %d\nbind 127.0.0.1\nprotected-mode yes\nsave ""\nappendonly no\ndaemonize no\ndir %s\nlogfile ""\n'
                % (port, tmp))
    p = subprocess.Popen([REDIS_SERVER, conf], stdout=subprocess.DEVNULL, start_new_session=True)
    if not wait_port(port):
        stop_group(p)
        raise SystemExit("redis-server did not start")
    return p, port
