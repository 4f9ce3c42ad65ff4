#!/usr/bin/python3
"""make deb's package, installed and used as a Debian user would, without touching this machine's /usr.

Usage: test_deb.py BUILD_DIR WORK_DIR README_APP APP_PROJECT SERVE_CHECK

Builds csgi_<version>_<arch>.deb from the build tree (cpack), checks its control file, then installs it:
with `dpkg -i` in a mount namespace of its own where /usr, /etc and /var are overlays (the machine's
files below, the package's writes above, dropped at the end), or, where no namespace can be made, with
`dpkg -x` into a root of its own. From there: `csgi --version`, `import csgi` (Debian's python3 from
dist-packages), the man page, the README's app built with find_package(csgi) and served on a free port
by the installed csgi, a one-file server (csgi_add_server), `csgi serve --wsgi`; then `dpkg -r`, after
which nothing of the package is left.
"""
import glob
import os
import re
import shutil
import socket
import threading
import subprocess
import sys

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        print("$ %s\n%s%s" % (" ".join(cmd), p.stdout[-3000:], p.stderr[-3000:]), flush=True)
    return p


def inside(prefix, work, app_src, app_project, serve_check, deb):
    """The checks on an installed package under `prefix` (/usr in the namespace, ROOT/usr otherwise)."""
    in_namespace = prefix == "/usr"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if in_namespace:
        check(run(["dpkg", "-i", deb]).returncode == 0, "dpkg -i " + os.path.basename(deb))
    else:
        env["PYTHONPATH"] = prefix + "/lib/python3/dist-packages"
    csgi = prefix + "/bin/csgi"
    p = run([csgi, "--version"])
    check(p.returncode == 0 and p.stdout.startswith("csgi "), "csgi --version: " + p.stdout.strip()[:60])
    for alias in ("csgi-fcgi", "csgi-cgi"):
        check(run([prefix + "/bin/" + alias, "--version"]).returncode == 0, alias + " --version")
    p = run(["/usr/bin/python3", "-c", "import csgi, csgi._csgi; print(csgi.__file__)"], env=env)
    check(p.returncode == 0 and p.stdout.startswith(prefix + "/lib/python3/dist-packages/csgi/"),
          "python3 imports csgi from the package: " + p.stdout.strip())
    page = prefix + "/share/man/man1/csgi.1.gz"
    man = ["man", "csgi"] if in_namespace else ["man", "-l", page]
    p = run(man, env=dict(env, MANPAGER="cat", PAGER="cat", MANWIDTH="100"))
    check(p.returncode == 0 and "SYNOPSIS" in p.stdout and "--listen ADDR" in p.stdout, " ".join(man[:2]) + " renders")
    p = run(["man", "-l", prefix + "/share/man/man1/csgi-fcgi.1"], env=dict(env, MANPAGER="cat", PAGER="cat"),
            cwd=prefix + "/share/man")
    check(p.returncode == 0 and "SYNOPSIS" in p.stdout, "man csgi-fcgi is csgi's page")

    build = os.path.join(work, "app")
    shutil.rmtree(build, ignore_errors=True)
    configure = ["cmake", "-S", app_project, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DREADME_APP=" + app_src]
    if not in_namespace:
        configure.append("-DCMAKE_PREFIX_PATH=" + prefix)
    ok = check(run(configure, env=env).returncode == 0, "find_package(csgi) against " + prefix)
    ok = ok and check(run(["cmake", "--build", build, "-j2"], env=env).returncode == 0, "the README's app builds")
    if ok:
        p = run(["/usr/bin/python3", serve_check, csgi, os.path.join(build, "libmyapp.so")], env=env)
        print(p.stdout, flush=True)
        check(p.returncode == 0, "the installed csgi serves the README's app on a free port")
        one_file_server(os.path.join(build, "hello"))
    wsgi_app(csgi, work, env)
    shutil.rmtree(build, ignore_errors=True)

    if in_namespace:
        listed = [l.split(None, 5)[-1].lstrip(".") for l in run(["dpkg-deb", "-c", deb]).stdout.splitlines()]
        files = [f for f in listed if not f.endswith("/")]
        check(run(["dpkg", "-r", "csgi"]).returncode == 0, "dpkg -r csgi")
        left = [f for f in files if os.path.lexists(f)]
        check(not left, "dpkg -r leaves none of the package's %d files: %s" % (len(files), left[:3]))
        left = [d for d in (prefix + "/lib/python3/dist-packages/csgi", prefix + "/lib/cmake/csgi",
                            prefix + "/include/csgi", prefix + "/lib/csgi") if os.path.exists(d)]
        check(not left, "nor its directories: %s" % left)


def serve_and_get(what, cmd, body, **popen_args):
    """Starts `cmd` (a csgi server given --listen 127.0.0.1:0), GETs / and expects `body`; SIGTERM ends it."""
    server = subprocess.Popen(cmd + ["--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True, **popen_args)
    watchdog = threading.Timer(120, server.kill)  # a server that never says it listens cannot hold the test
    watchdog.start()
    try:
        port = None
        for _ in range(20):
            line = server.stdout.readline()
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
            if not line or m:
                port = m and int(m.group(1))
                break
        if check(port is not None, what + " listens on 127.0.0.1:0"):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                data = b""
                for _ in range(1000):
                    d = s.recv(65536)
                    if not d:
                        break
                    data += d
            check(data.startswith(b"HTTP/1.1 200") and data.endswith(body), "%s answers GET /: %r" % (what, data[-40:]))
    finally:
        server.terminate()
        check(server.wait(timeout=30) == 0, what + " exits 0 on SIGTERM")
        watchdog.cancel()


def one_file_server(hello):
    """csgi_add_server's executable: small once stripped, no libstdc++ to find, serves as csgi serve does."""
    stripped = hello + ".stripped"
    check(run(["strip", "-o", stripped, hello]).returncode == 0, "strip hello")
    size = os.path.getsize(stripped)
    check(size <= 3 * 1024 * 1024, "the one-file hello server is %d bytes stripped (at most 3 MiB)" % size)
    libs = run(["ldd", stripped]).stdout
    check("libstdc++" not in libs and "libcsgi" not in libs, "it needs neither libstdc++ nor a libcsgi_*.so")
    serve_and_get("hello", [stripped], b"Hello, world!\n")


def wsgi_app(csgi, work, env):
    """`csgi serve --wsgi` finds the package's Python module from the installed program."""
    with open(os.path.join(work, "wsgi_hello.py"), "w") as f:
        f.write("def app(environ, start_response):\n"
                "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
                "    return [b'Hello from WSGI\\n']\n")
    serve_and_get("csgi serve --wsgi", [csgi, "serve", "--wsgi", "wsgi_hello:app"], b"Hello from WSGI\n", cwd=work, env=env)


def namespace_works(work):
    probe = os.path.join(work, "probe")
    os.makedirs(probe + "/u")
    os.makedirs(probe + "/w")
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                        "mount -t overlay overlay -o lowerdir=/usr,upperdir=%s/u,workdir=%s/w /usr" % (probe, probe)],
                       capture_output=True, text=True, timeout=60)
    shutil.rmtree(probe)
    return p.returncode == 0


def main():
    if sys.argv[1] == "inside":
        inside(*sys.argv[2:8])
        return 1 if failures else 0
    build, work, app_src, app_project, serve_check = sys.argv[1:6]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    p = run(["cpack", "--config", os.path.join(build, "CPackConfig.cmake"), "-B", os.path.join(work, "pkg")])
    debs = glob.glob(os.path.join(work, "pkg", "csgi_*.deb"))
    if not check(p.returncode == 0 and len(debs) == 1, "cpack -G DEB writes one package: %s" % debs):
        return 1
    deb = debs[0]
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    version = run(["dpkg-deb", "-f", deb, "Version"]).stdout.strip()
    check(os.path.basename(deb) == "csgi_%s_%s.deb" % (version, arch), "named csgi_<version>_<arch>.deb: " + deb)
    depends = [d.strip().split()[0] for d in run(["dpkg-deb", "-f", deb, "Depends"]).stdout.split(",") if d.strip()]
    for lib in ("libc6", "libstdc++6", "libnghttp2-14", "libssl3", "python3"):
        check(lib in depends, "Depends: names %s (%s)" % (lib, ", ".join(depends)))
    listed = run(["dpkg-deb", "-c", deb]).stdout
    for path in ("./usr/bin/csgi", "./usr/bin/csgi-fcgi", "./usr/bin/csgi-cgi", "./usr/lib/cmake/csgi/csgiConfig.cmake",
                 "./usr/lib/python3/dist-packages/csgi/__init__.py", "./usr/share/man/man1/csgi.1.gz",
                 "./usr/lib/systemd/system/csgi-http.service", "./usr/include/csgi/core/app_library.hpp"):
        check((" " + path + "\n") in listed, "the package holds " + path)
    check(all(l.split(None, 5)[-1].startswith("./usr/") or l.split(None, 5)[-1] == "./" for l in listed.splitlines()),
          "everything is under /usr")
    if "/auto/CSGI/CSGI.so\n" in listed:  # --psgi: libperl is loaded with dlopen(), unseen by dpkg-shlibdeps
        perl_version = run(["perl", "-MConfig", "-e", "print $Config{version}"]).stdout.strip()
        for dep in ("libperl" + perl_version.rsplit(".", 1)[0], "perlapi-" + perl_version):
            check(dep in depends, "Depends: names %s (%s)" % (dep, ", ".join(depends)))

    me = os.path.abspath(__file__)
    if namespace_works(work):
        print("installing with dpkg -i in a mount namespace whose /usr, /etc and /var are overlays", flush=True)
        mounts = []
        for d in ("/usr", "/etc", "/var"):
            up, wk = os.path.join(work, "overlay" + d, "upper"), os.path.join(work, "overlay" + d, "work")
            os.makedirs(up)
            os.makedirs(wk)
            mounts.append("mount -t overlay overlay -o lowerdir=%s,upperdir=%s,workdir=%s %s" % (d, up, wk, d))
        script = " && ".join(mounts) + ' && exec "$@"'
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", "/usr/bin/python3",
                            me, "inside", "/usr", work, app_src, app_project, serve_check, deb], timeout=900)
    else:
        print("no mount namespace here: dpkg -x into a root of its own", flush=True)
        root = os.path.join(work, "root")
        check(run(["dpkg", "-x", deb, root]).returncode == 0, "dpkg -x")
        p = subprocess.run(["/usr/bin/python3", me, "inside", root + "/usr", work, app_src, app_project, serve_check, deb],
                           timeout=900)
    check(p.returncode == 0, "the installed package works (above)")
    shutil.rmtree(work, ignore_errors=True)
    check(not os.path.exists(work), "the package test removed what it installed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
