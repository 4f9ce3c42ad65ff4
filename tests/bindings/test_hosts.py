"""Real WSGI hosts on loopback serving C++ stacks through the bindings: gunicorn (sync, gthread), uWSGI
(http-socket; two mounts = two sub-interpreters), Flask with a C++ app under /cpp."""
import concurrent.futures
import json
import os
import re
import sys

import pytest

from conftest import PYTHON, SMUGGLED, assert_header_rule, fetch, free_port, have

HOSTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hosted")


def exercise_stack(server):
    """The same checks for every host; every response also passed wsgiref.validate in the server."""
    status, headers, body = server.request("GET", "/hello")
    assert status == 200, body
    assert body == b"Hello, World!"
    assert dict(headers).get("X-Stack") == "1"
    status, headers, body = server.request("POST", "/echo/caf%C3%A9?x=1", body=b"a" * 70000,
                                           headers={"Content-Type": "application/octet-stream", "X-Test": "t"})
    assert status == 200, body
    assert b"SCRIPT_NAME=/echo\n" in body and "PATH_INFO=/café\n".encode() in body
    assert b"HTTP_X_TEST=t\n" in body and body.endswith(b"body=" + b"a" * 70000)
    status, headers, body = server.request("GET", "/stream")
    assert status == 200 and body == b"".join(b"chunk%d\n" % i for i in range(5))
    status, _, body = server.request("GET", "/missing")
    assert status == 404
    for _ in range(30):  # a short bounded loop over one connection each
        assert server.request("GET", "/hello")[0] == 200


def gunicorn_argv(port, worker, module="cxx_stack:application", threads=1):
    return [PYTHON, "-m", "gunicorn", "--bind", "127.0.0.1:%d" % port, "--workers", "1", "--worker-class", worker,
            "--threads", str(threads), "--chdir", HOSTED, "--log-level", "warning", module]


@pytest.mark.parametrize("worker", ["sync", "gthread"])
def test_gunicorn_hosts_a_cxx_stack(server_factory, worker):
    port = free_port()
    server = server_factory(gunicorn_argv(port, worker, threads=4 if worker == "gthread" else 1), port)
    exercise_stack(server)


def test_gunicorn_sendfile_through_file_wrapper(server_factory, tmp_path):
    data = os.urandom(300000)
    (tmp_path / "blob").write_bytes(data)
    port = free_port()
    server = server_factory(gunicorn_argv(port, "sync"), port, env={"CSGI_HOSTED_APP": "file"})
    # hosted app "file" needs its path: serve through a tiny module instead
    server.stop()
    mod = tmp_path / "filehost.py"
    mod.write_text("import csgi, os\napplication = csgi.load_app(os.environ['CSGI_TEST_APPS'], "
                   "['file', %r])\n" % str(tmp_path / "blob"))
    port = free_port()
    server = server_factory([PYTHON, "-m", "gunicorn", "--bind", "127.0.0.1:%d" % port, "--chdir", str(tmp_path),
                             "filehost:application"], port)
    status, headers, body = server.request("GET", "/")
    assert status == 200 and body == data


def uwsgi_two_mounts(port, directory):
    """uWSGI with a.py mounted on /a and b.py on /b: two sub-interpreters, two threads."""
    return ["uwsgi", "--plugin", "python3", "--http-socket", "127.0.0.1:%d" % port, "--master", "--processes", "1",
            "--threads", "2", "--enable-threads", "--chdir", str(directory), "--mount", "/a=a.py",
            "--mount", "/b=b.py", "--manage-script-name", "--die-on-term", "--need-app",
            "--pythonpath", os.environ.get("PYTHONPATH", "")]


def test_gunicorn_environ_keeps_to_the_header_rule(server_factory):
    # gunicorn names the keys: Proxy arrives as HTTP_PROXY (httpoxy), which no env may hold (ENV-10), and
    # HTTP_CONTENT_LENGTH is never a key (ENV-11). gunicorn 20 turns X_Remote_User into the same key as
    # X-Remote-User; later versions drop it (header_map), as csgi serve does.
    port = free_port()
    server = server_factory(gunicorn_argv(port, "sync"), port, env={"CSGI_HOSTED_APP": "dump"})
    status, _, body = server.request("GET", "/d", headers={"Proxy": "http://evil:3128", "X-Remote-User": "alice"})
    lines = body.decode("latin-1").split("\n")
    assert status == 200 and lines[-1] == "lint=ok", body
    assert "HTTP_X_REMOTE_USER=alice" in lines and not any("evil" in l for l in lines), lines


def test_csgi_serve_keeps_to_the_header_rule(server_factory, csgi_bin, apps_lib):
    port = free_port()
    server = server_factory([csgi_bin, "serve", "--app", apps_lib, "--app-arg", "dump",
                             "--listen", "127.0.0.1:%d" % port], port)
    status, _, _, body = fetch(port, "GET", "/d", headers=SMUGGLED)
    assert status == 200, body
    assert_header_rule(body)


@pytest.mark.skipif(not have("uwsgi"), reason="uwsgi not installed")
def test_uwsgi_two_mounts_two_subinterpreters(server_factory, tmp_path):
    (tmp_path / "a.py").write_text(
        "import sys, csgi, os\n"
        "sys.path.insert(0, %r)\n"
        "from cxx_stack import application as inner\n"
        "def application(environ, start_response):\n"
        "    return inner(environ, start_response)\n" % HOSTED)
    (tmp_path / "b.py").write_text(
        "import csgi, os\n"
        "lib = os.environ['CSGI_TEST_APPS']\n"
        "def py(environ, start_response):\n"
        "    if environ['PATH_INFO'] == '/raise':\n"
        "        raise KeyError('from the sub-interpreter')\n"
        "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
        "    return [b'py in sub ' + environ['SCRIPT_NAME'].encode()]\n"
        "application = (csgi.Builder().use(lambda app: app)\n"
        "    .mount('/echo', csgi.load_app(lib, ['echo']))\n"
        "    .mount('/err', csgi.load_app(lib, ['error']))\n"
        "    .mount('/py', py).build())\n")
    port = free_port()
    argv = uwsgi_two_mounts(port, tmp_path)
    server = server_factory(argv, port)
    status, headers, body = server.request("GET", "/a/hello")
    assert status == 200 and body == b"Hello, World!", server.output()
    status, headers, body = server.request("POST", "/b/echo/x?q=1", body=b"sub")
    assert status == 200, server.output()
    assert b"SCRIPT_NAME=/b/echo\n" in body and b"PATH_INFO=/x\n" in body and body.endswith(b"body=sub")
    status, _, body = server.request("GET", "/a/stream")
    assert status == 200 and body.count(b"chunk") == 5
    # Python → C++ → Python inside the sub-interpreter, and the error paths that re-enter Python there.
    status, _, body = server.request("GET", "/b/py/x")
    assert status == 200 and body == b"py in sub /b/py", server.output()
    status, _, body = server.request("GET", "/b/py/raise")
    assert status == 500, server.output()
    status, _, body = server.request("GET", "/b/err")
    assert status == 500
    for i in range(20):
        assert server.request("GET", "/a/hello" if i % 2 else "/b/echo/")[0] == 200
    out = server.output()
    assert "multiple interpreter mode" in out and "mounting b.py on /b" in out
    assert "boom from C++" in out and "KeyError: 'from the sub-interpreter'" in out


@pytest.mark.skipif(not have("uwsgi"), reason="uwsgi not installed")
def test_uwsgi_subinterpreter_python_exception_under_cxx(server_factory, tmp_path):
    """A Python exception from a WSGI app mounted in a C++ Builder, in a uWSGI sub-interpreter, on either of
    two threads. Regressions it guards: uWSGI makes each thread's sub-interpreter thread state on the main
    thread, so PyThreadState::thread_id does not name the thread running it, and the traceback written to
    csgi.errors (re-entering the GIL the thread already held) waited for itself on the second thread; and csgi
    imported first in a sub-interpreter (a.py here never imports it) hung in pybind11's PyGILState setup."""
    (tmp_path / "b.py").write_text(
        "import csgi, threading\n"
        "def py(environ, start_response):\n"
        "    raise KeyError('from the sub-interpreter on thread %d' % threading.get_ident())\n"
        "application = csgi.Builder().mount('/py', py).build()\n")
    (tmp_path / "a.py").write_text(
        "def application(environ, start_response):\n"
        "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
        "    return [b'a']\n")
    port = free_port()
    argv = uwsgi_two_mounts(port, tmp_path)
    server = server_factory(argv, port)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # two at a time: both uWSGI threads serve
        paths = ["/b/py/raise", "/a/"] * 10
        statuses = list(pool.map(lambda p: server.request("GET", p, timeout=5)[0], paths))
    assert statuses == [500, 200] * 10, server.output()
    out = server.output()
    threads = set(re.findall(r"KeyError: 'from the sub-interpreter on thread (\d+)'", out))
    assert out.count("KeyError: 'from the sub-interpreter") == 10, out
    assert len(threads) == 2, "expected the errors from both uWSGI threads: %s" % threads


@pytest.mark.skipif(not have("uwsgi"), reason="uwsgi not installed")
def test_uwsgi_http_socket_hosts_a_cxx_stack(server_factory):
    port = free_port()
    argv = ["uwsgi", "--plugin", "python3", "--http-socket", "127.0.0.1:%d" % port, "--processes", "1",
            "--chdir", HOSTED, "--wsgi-file", os.path.join(HOSTED, "cxx_stack.py"), "--die-on-term", "--need-app",
            "--pythonpath", os.environ.get("PYTHONPATH", "")]
    exercise_stack(server_factory(argv, port))


def exercise_dot_segments(server):
    """The host leaves dot segments in PATH_INFO (decoded, unresolved); the bindings make it canonical
    (spec ENV-5) before the C++ stack routes, so "/hello/.." never reaches the /hello mount."""
    status, _, body = server.request("GET", "/hello/../echo/x/./y")
    assert status == 200 and b"SCRIPT_NAME=/echo\n" in body and b"PATH_INFO=/x/y\n" in body, body
    status, _, body = server.request("GET", "/echo/%2e%2e/hello")
    assert status == 200 and body == b"Hello, World!", body
    status, _, body = server.request("GET", "/hello/x/../..")
    assert status == 404, body  # "/": nothing is mounted there
    status, _, body = server.request("GET", "/echo/%2e%2e/%2e%2e/etc/passwd")
    assert status == 400 and b"root" in body, body


def test_gunicorn_hosted_stack_sees_canonical_paths(server_factory):
    port = free_port()
    exercise_dot_segments(server_factory(gunicorn_argv(port, "sync"), port))
    port = free_port()  # a bare app (no UrlMap of its own): the bindings alone make the path canonical
    server = server_factory(gunicorn_argv(port, "sync"), port, env={"CSGI_HOSTED_APP": "echo"})
    status, _, body = server.request("GET", "/admin/x/../%2e%2e/./y?q=/..")
    assert status == 200 and b"PATH_INFO=/y\n" in body and b"REQUEST_URI=/admin/x/../%2e%2e/./y?q=/..\n" in body, body
    status, _, body = server.request("GET", "/admin/../..")
    assert status == 400, body


def test_gunicorn_environ_reaches_the_env(server_factory):
    # The env is read from gunicorn's environ as the app uses it: a header read by name, and every entry
    # when the app iterates (dump, which also runs Lint's env checks).
    port = free_port()
    server = server_factory(gunicorn_argv(port, "sync"), port, env={"CSGI_HOSTED_APP": "echo"})
    status, _, body = server.request("GET", "/e?q=1", headers={"X-Test": "from-the-wire"})
    assert status == 200 and b"HTTP_X_TEST=from-the-wire\n" in body and b"QUERY_STRING=q=1\n" in body, body
    port = free_port()
    server = server_factory(gunicorn_argv(port, "sync"), port, env={"CSGI_HOSTED_APP": "dump"})
    for _ in range(3):  # the worker's exchange is reused: every request sees its own entries
        status, _, body = server.request("POST", "/d/x?y=2", body=b"abc", headers={"X-Foo": "bar", "Cookie": "k=v"})
        lines = body.decode("latin-1").split("\n")
        assert status == 200 and lines[-1] == "lint=ok", body
        for want in ("HTTP_X_FOO=bar", "HTTP_COOKIE=k=v", "REQUEST_METHOD=POST", "PATH_INFO=/d/x", "SCRIPT_NAME=",
                     "QUERY_STRING=y=2", "REQUEST_URI=/d/x?y=2", "RAW_URI=/d/x?y=2", "CONTENT_LENGTH=3",
                     "SERVER_PROTOCOL=HTTP/1.1", "REMOTE_ADDR=127.0.0.1", "csgi.input=<object>",
                     "csgi.errors=<object>", "csgi.multithread=<false>", "csgi.multiprocess=<false>"):
            assert want in lines, (want, lines)
        assert not any(l.startswith(("wsgi.", "gunicorn.")) for l in lines), lines
        status, _, body = server.request("GET", "/other")
        assert status == 200 and b"HTTP_X_FOO" not in body and b"PATH_INFO=/other\n" in body, body


@pytest.mark.skipif(not have("uwsgi"), reason="uwsgi not installed")
def test_uwsgi_hosted_stack_sees_canonical_paths(server_factory):
    port = free_port()
    argv = ["uwsgi", "--plugin", "python3", "--http-socket", "127.0.0.1:%d" % port, "--processes", "1",
            "--chdir", HOSTED, "--wsgi-file", os.path.join(HOSTED, "cxx_stack.py"), "--die-on-term", "--need-app",
            "--pythonpath", os.environ.get("PYTHONPATH", "")]
    exercise_dot_segments(server_factory(argv, port))


def test_flask_with_cxx_app_under_cpp_in_process():
    sys.path.insert(0, HOSTED)
    import flask_site
    from werkzeug.test import Client

    client = Client(flask_site.application)
    r = client.get("/")
    assert r.status_code == 200 and r.get_data() == b"index /item/x%20y"
    r = client.get("/cpp/hello")
    assert r.status_code == 200 and r.get_data() == b"Hello, World!" and r.headers["X-Stack"] == "1"
    r = client.get("/cpp/echo/z")
    assert b"SCRIPT_NAME=/cpp/echo\n" in r.get_data() and b"PATH_INFO=/z\n" in r.get_data()


def test_flask_url_for_honours_script_name_under_gunicorn(server_factory):
    port = free_port()
    server = server_factory(gunicorn_argv(port, "sync", "flask_site:application"), port,
                            env={"SCRIPT_NAME": "/site"})
    status, _, body = server.request("GET", "/site/item/a%20b?x=1")
    assert status == 200, body
    assert json.loads(body) == {"name": "a b", "link": "/site/item/a%20b", "args": {"x": ["1"]}}
    status, headers, body = server.request("GET", "/site/cpp/echo/q")
    assert status == 200 and b"SCRIPT_NAME=/site/cpp/echo\n" in body
