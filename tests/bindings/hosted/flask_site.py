"""A small Flask site with a C++ app mounted under /cpp through Werkzeug's DispatcherMiddleware."""
import os

from flask import Flask, request, url_for, jsonify, abort
from werkzeug.middleware.dispatcher import DispatcherMiddleware

import csgi

app = Flask(__name__)


@app.route("/")
def index():
    return "index " + url_for("item", name="x y")


@app.route("/item/<name>")
def item(name):
    return jsonify(name=name, link=url_for("item", name=name), args=request.args.to_dict(flat=False))


@app.route("/form", methods=["POST"])
def form():
    files = {k: (f.filename, len(f.read())) for k, f in request.files.items()}
    return jsonify(form=request.form.to_dict(flat=False), files=files)


@app.route("/boom")
def boom():
    raise RuntimeError("flask boom")


@app.route("/teapot")
def teapot():
    abort(418)


cpp = csgi.load_app(os.environ["CSGI_TEST_APPS"], ["stack"])
application = DispatcherMiddleware(app, {"/cpp": cpp})
