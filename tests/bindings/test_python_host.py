"""The Python host is loaded only for --wsgi: `csgi` and `csgi-fcgi` have no libpython among their
dependencies and do not map it for a C++ app; `--wsgi` dlopen()s libcsgi_python_host.so from the csgi
package directory (C extensions imported by the app resolve libpython's symbols through it) and says
clearly when the module or libpython cannot be loaded."""
import os
import shutil
import subprocess

import pytest

from conftest import free_port

NEEDS = "--wsgi needs the Python host module"
HOST = "libcsgi_python_host.so"

C_EXTENSIONS_APP = '''
import _ctypes, _json, ctypes, json, select
def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps({"ctypes": ctypes.c_int(41).value + 1, "poll": hasattr(select, "poll"),
                        "c_encoder": json.encoder.c_make_encoder is not None}).encode()]
'''


def programs():
    build = os.environ.get("CSGI_BUILD_DIR", "")
    found = [os.path.join(build, "adapters", "cli", "csgi"), os.path.join(build, "adapters", "fastcgi", "csgi-fcgi")]
    return [p for p in found if os.path.exists(p)]


def wsgi_argv(program, spec):
    listen = ["--listen", "127.0.0.1:%d" % free_port()]
    return [program, "--wsgi", spec] + listen if program.endswith("csgi-fcgi") else \
        [program, "serve", "--wsgi", spec] + listen


def mapped(pid):
    with open("/proc/%d/maps" % pid) as f:
        return f.read()


def package_dir():
    import csgi
    return os.path.dirname(os.path.dirname(os.path.abspath(csgi.__file__)))


def start_fails(argv, env, cwd):
    """Runs a program expected to refuse to start; its (returncode, stderr)."""
    try:
        r = subprocess.run(argv, env=dict(os.environ, **env), cwd=cwd, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("%s started although it should have refused" % argv[0])
    return r.returncode, r.stderr


def test_the_programs_do_not_link_libpython():
    assert programs(), "csgi is not built (target csgi_cli)"
    for program in programs():
        dynamic = subprocess.run(["readelf", "-d", program], capture_output=True, text=True, check=True).stdout
        needed = [line for line in dynamic.splitlines() if "(NEEDED)" in line]
        assert needed and not [n for n in needed if "libpython" in n], (program, needed)


def test_a_cpp_app_runs_without_python_in_the_process(server_factory, csgi_bin, apps_lib, tmp_path):
    port = free_port()
    server = server_factory([csgi_bin, "serve", "--app", apps_lib, "--listen", "127.0.0.1:%d" % port], port)
    assert server.request("GET", "/")[0] == 200
    maps = mapped(server.proc.pid)
    assert "libpython" not in maps and HOST not in maps


@pytest.mark.parametrize("embed", ["1", ""])
def test_c_extensions_import_in_a_wsgi_app(server_factory, csgi_bin, tmp_path, embed):
    """Embedded (CSGI_PYTHON_EMBED=1: libpython and the host module mapped in csgi) and run by the Python
    program (neither: /usr/bin/python3 has the interpreter linked in)."""
    (tmp_path / "cext_app.py").write_text(C_EXTENSIONS_APP)
    port = free_port()
    server = server_factory([csgi_bin, "serve", "--wsgi", "cext_app", "--listen", "127.0.0.1:%d" % port,
                             "--workers", "2"], port, cwd=tmp_path, env={"CSGI_PYTHON_EMBED": embed})
    status, _, body = server.request("GET", "/")
    assert status == 200, server.output()
    assert body == b'{"ctypes": 42, "poll": true, "c_encoder": true}'
    maps = mapped(server.proc.pid)
    assert ("libpython" in maps and HOST in maps) == bool(embed), maps


def test_a_missing_host_module_is_named(tmp_path):
    (tmp_path / "hello.py").write_text("def application(e, s):\n    s('200 OK', [])\n    return [b'hi']\n")
    without = tmp_path / "without"
    shutil.copytree(os.path.join(package_dir(), "csgi"), without / "csgi", ignore=shutil.ignore_patterns(HOST))
    for program in programs():
        rc, err = start_fails(wsgi_argv(program, "hello"), {"CSGI_PYTHON_DIR": str(without)}, tmp_path)
        assert rc == 1 and NEEDS in err and str(without / "csgi" / HOST) in err, (program, err)


def test_a_missing_libpython_is_named(tmp_path):
    (tmp_path / "hello.py").write_text("def application(e, s):\n    s('200 OK', [])\n    return [b'hi']\n")
    broken = tmp_path / "broken"
    shutil.copytree(os.path.join(package_dir(), "csgi"), broken / "csgi")
    module = broken / "csgi" / HOST
    data = module.read_bytes()
    name = next(w for w in data.split(b"\0") if w.startswith(b"libpython") and b".so" in w)
    gone = name.replace(b"libpython", b"libpyth0n")  # the same length: the NEEDED entry of a library not here
    module.write_bytes(data.replace(name + b"\0", gone + b"\0"))
    for program in programs():
        # Embedded: run by the Python program, csgi serve would not load the host module at all.
        rc, err = start_fails(wsgi_argv(program, "hello"), {"CSGI_PYTHON_DIR": str(broken), "CSGI_PYTHON_EMBED": "1"},
                              tmp_path)
        assert rc == 1 and NEEDS in err and gone.decode() in err, (program, err)
