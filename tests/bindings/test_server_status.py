"""csgi.mw.server_status over the serving adapter's counters (csgix.server_stats, spec EXT-7): a WSGI app
under `csgi serve --wsgi` (the standalone adapter) sees that server's counts; the same stack inside
gunicorn (to_wsgi: no adapter counters) answers 501."""
import json

from conftest import PYTHON, free_port

STACK = """
import csgi
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hi"]
application = csgi.Builder().use(csgi.mw.server_status()).to_app(app)
"""


def test_status_page_under_csgi_serve_wsgi_shows_the_servers_counts(server_factory, csgi_bin, tmp_path):
    (tmp_path / "status_stack.py").write_text(STACK)
    port = free_port()
    server = server_factory([csgi_bin, "serve", "--wsgi", "status_stack:application", "--listen",
                             "127.0.0.1:%d" % port], port, cwd=tmp_path)
    for path in ("/a", "/b"):
        assert server.request("GET", path)[2] == b"hi"
    status, _, body = server.request("GET", "/server-status?json")
    assert status == 200, server.output()
    page = json.loads(body)
    assert page["adapter"] == "standalone"
    assert page["requests"]["total"] == 2
    assert page["bytes_sent"] == 4


def test_status_page_under_gunicorn_says_501(server_factory, tmp_path):
    (tmp_path / "status_stack.py").write_text(STACK)
    port = free_port()
    server = server_factory([PYTHON, "-m", "gunicorn", "--bind", "127.0.0.1:%d" % port, "--chdir", str(tmp_path),
                             "--log-level", "warning", "status_stack:application"], port)
    assert server.request("GET", "/")[2] == b"hi"
    status, _, body = server.request("GET", "/server-status")
    assert status == 501, server.output()
    assert b"csgix.server_stats" in body
