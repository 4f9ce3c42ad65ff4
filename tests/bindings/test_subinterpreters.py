"""The bindings in a sub-interpreter run by a thread whose thread state was made on another thread, in process
(what uWSGI does with --mount and --threads; test_hosts.py has the real uWSGI). _xxsubinterpreters (CPython
3.11) runs code in an interpreter with the thread state Py_NewInterpreter() made on the creating thread, so
PyThreadState::thread_id names the main thread while a second thread runs it. Each case runs in a fresh
process with a time limit: the bugs these guard against were hangs."""
import subprocess
import textwrap

import pytest

from conftest import PYTHON

pytest.importorskip("_xxsubinterpreters")

# A hang keeps the GIL, so no Python in that process can notice it: the subprocess time limit does.
DRIVER = textwrap.dedent('''
    import _xxsubinterpreters as interpreters, sys, threading
    if sys.argv[1] == "main-first":
        import csgi  # pybind11's one-time setup in the main interpreter
    interp = interpreters.create()
    failures = []
    def run():
        try:
            interpreters.run_string(interp, sys.stdin.read())
        except Exception as e:  # RunFailedError: the sub-interpreter's assertion, as text
            failures.append(e)
    t = threading.Thread(target=run)
    t.start()
    t.join()
    print("FAILED %r" % failures if failures else "OK", flush=True)
''')

# Python app under a C++ Builder raising (its traceback is written to the host's wsgi.errors, re-entering
# Python while the GIL is held), a Python layer run by build(), a stream pulled through the GIL, and objects
# dropped by Python (their Python references released under the GIL already held).
SUB = textwrap.dedent('''
    import csgi, io, wsgiref.util
    def py(environ, start_response):
        if environ["PATH_INFO"] == "/raise":
            raise KeyError("from the sub-interpreter")
        start_response("200 OK", [("Content-Type", "text/plain")])
        return (b"chunk%d" % i for i in range(3))
    def call(app, path):
        environ = {}
        wsgiref.util.setup_testing_defaults(environ)
        environ["PATH_INFO"] = path
        environ["wsgi.errors"] = io.StringIO()
        seen = []
        result = app(environ, lambda s, h, e=None: seen.append(s))
        try:
            body = b"".join(result)
        finally:
            getattr(result, "close", lambda: None)()
        return seen[0], body, environ["wsgi.errors"].getvalue()
    for i in range(3):
        app = csgi.Builder().use(lambda inner: inner).mount("/py", py).build()
        status, body, errors = call(app, "/py/raise")
        assert status.startswith("500"), status
        assert "KeyError: 'from the sub-interpreter'" in errors, errors
        status, body, errors = call(app, "/py/stream")
        assert status.startswith("200") and body == b"chunk0chunk1chunk2", (status, body, errors)
        del app
''')


@pytest.mark.parametrize("order", ["sub-first", "main-first"])
def test_python_exception_under_cxx_in_a_subinterpreter_on_another_thread(order):
    try:
        out = subprocess.run([PYTHON, "-c", DRIVER, order], input=SUB, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("hung (no answer in 30 s)")
    assert out.stdout.strip() == "OK", out.stdout + out.stderr
