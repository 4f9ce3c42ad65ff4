#!/usr/bin/env python3
"""Starts `csgi serve` with the canary app on a free loopback port (body limit 1 MiB, as the corpus
assumes) and replays the bad-request corpus against it; optionally the same corpus through nginx as a
reverse proxy in front of it (--nginx), reporting where the two verdicts differ.

  run_corpus.py --csgi build/adapters/cli/csgi --app build/tests/reliability/libcanary_app.so [--nginx]
                [--markdown FILE] [--quiet]
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

NGINX_CONF = """user {user};
worker_processes 1;
error_log {work}/nginx-error.log warn;
pid {work}/nginx.pid;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {work}/cb; proxy_temp_path {work}/px; fastcgi_temp_path {work}/fc;
    uwsgi_temp_path {work}/uw; scgi_temp_path {work}/sc;
    client_max_body_size 1m;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{backend};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csgi", required=True)
    ap.add_argument("--app", required=True)
    ap.add_argument("--nginx", action="store_true")
    ap.add_argument("--markdown")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    work = netlab.tempdir()
    port = netlab.free_port()
    server = netlab.Proc([args.csgi, "serve", "--app", args.app, "--listen", f"127.0.0.1:{port}",
                          "--max-body-bytes", "1048576"], os.path.join(work, "csgi.log"))
    rc = 1
    try:
        netlab.wait_port("127.0.0.1", port)
        replay = [sys.executable, os.path.join(HERE, "replay.py")]
        q = ["--quiet"] if args.quiet else []
        direct_json = os.path.join(work, "csgi.json")
        md = ["--markdown", args.markdown] if args.markdown else []
        rc = subprocess.run(replay + ["--target", f"127.0.0.1:{port}", "--json", direct_json] + q + md).returncode
        if args.nginx:
            nport = netlab.free_port()
            conf = os.path.join(work, "nginx.conf")
            user = "root" if os.geteuid() == 0 else os.environ.get("USER", "nobody")
            open(conf, "w").write(NGINX_CONF.format(user=user, work=work, port=nport, backend=port))
            nginx = netlab.Proc(["nginx", "-p", work, "-c", conf, "-g", "daemon off;"], os.path.join(work, "nginx.log"))
            try:
                netlab.wait_port("127.0.0.1", nport)
                nginx_json = os.path.join(work, "nginx.json")
                subprocess.run(replay + ["--target", f"127.0.0.1:{nport}", "--json", nginx_json, "--quiet"])
                subprocess.run(replay + ["--compare", direct_json, nginx_json])
            finally:
                nginx.stop()
        if server.p.poll() is not None:
            print(f"FAIL: csgi serve exited with {server.p.returncode} during the corpus (see {work}/csgi.log)")
            rc = 1
    finally:
        server.stop()
    return rc


if __name__ == "__main__":
    sys.exit(main())
