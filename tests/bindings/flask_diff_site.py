"""A small Flask app for the differential test (the same module served by `csgi serve --wsgi` and by
gunicorn): routes with query strings, forms, uploads, unicode paths, JSON, redirects, errors, a streamed
response, send_file (wsgi.file_wrapper), cookies, and a C++ app mounted under /cpp when CSGI_TEST_APPS
names the test app library."""
import hashlib
import os
import tempfile

from flask import Flask, Response, abort, jsonify, redirect, request, send_file, stream_with_context, url_for

app = Flask(__name__)

FILE_DATA = bytes((i * 17 + 5) & 0xFF for i in range(150000))
FILE_PATH = os.path.join(tempfile.mkdtemp(prefix="csgi-flask-"), "data.bin")
with open(FILE_PATH, "wb") as f:
    f.write(FILE_DATA)
os.utime(FILE_PATH, (1700000000, 1700000000))  # the same Last-Modified in every server process


@app.route("/")
def index():
    return "<h1>csgi flask</h1><a href='%s'>item</a>" % url_for("item", name="x y")


@app.route("/item/<name>")
def item(name):
    return jsonify(name=name, link=url_for("item", name=name), args=request.args.to_dict(flat=False))


@app.route("/form", methods=["POST"])
def form():
    return jsonify(form=request.form.to_dict(flat=False), mimetype=request.mimetype)


@app.route("/upload", methods=["POST"])
def upload():
    files = {}
    for k, fs in request.files.items(multi=True):
        data = fs.read()
        files.setdefault(k, []).append([fs.filename, len(data), hashlib.sha256(data).hexdigest()])
    return jsonify(files=files, form=request.form.to_dict(flat=False))


@app.route("/raw", methods=["POST", "PUT"])
def raw():
    data = request.get_data()
    return Response(b"%d %s" % (len(data), hashlib.sha256(data).hexdigest().encode()), mimetype="text/plain")


@app.route("/json", methods=["POST"])
def json_echo():
    return jsonify(got=request.get_json(), n=len(request.get_data()))


@app.route("/caf\u00e9/<name>")
def unicode_page(name):
    return "caf\u00e9 page: %s (%s)" % (name, request.path)


@app.route("/boom")
def boom():
    raise RuntimeError("flask boom")


@app.route("/teapot")
def teapot():
    abort(418)


@app.route("/forbidden")
def forbidden():
    abort(403)


@app.route("/redirect")
def go():
    return redirect(url_for("item", name="moved"))


@app.route("/stream")
def stream():
    def gen():
        for i in range(10):
            yield "chunk %d\n" % i
    return Response(stream_with_context(gen()), mimetype="text/plain")


@app.route("/download")
def download():
    return send_file(FILE_PATH, mimetype="application/octet-stream", etag=False, max_age=None)


@app.route("/cookie")
def cookie():
    r = Response("seen=%s" % request.cookies.get("visit", "none"), mimetype="text/plain")
    r.set_cookie("visit", "yes", max_age=60, httponly=True, samesite="Lax")
    return r


@app.route("/headers")
def headers():
    return jsonify({k: v for k, v in request.headers.items() if k.lower().startswith("x-")})


@app.route("/status/<int:code>")
def status(code):
    return Response("status %d" % code, status=code, mimetype="text/plain")


application = app
if os.environ.get("CSGI_TEST_APPS"):
    import csgi
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    application = DispatcherMiddleware(app, {"/cpp": csgi.load_app(os.environ["CSGI_TEST_APPS"], ["stack"])})
