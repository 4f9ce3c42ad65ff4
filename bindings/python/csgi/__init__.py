"""csgi — the C++ Server Gateway Interface, from Python.

C++ → Python: any csgi app (``load_app("libx.so")``, a ``Builder`` stack, the built-ins) is a
``csgi.App``, a PEP 3333 WSGI callable that any WSGI host (gunicorn, uWSGI, Werkzeug, Django's runserver)
can serve.

Python → C++: ``csgi.App(wsgi_app)`` makes a WSGI app a csgi app, so it can sit behind C++ middleware
(``csgi.Builder().use(...).to_app(flask_app)``), be mounted beside C++ apps, and be served by the csgi
adapters (``csgi.serve(app, listen=...)``, ``csgi serve --wsgi module:app``).
"""
from ._csgi import App, Builder, Layer, load_app, reopen_logs, spec_version  # noqa: F401
from ._csgi import BodyIterator, ErrorsStream, FileWrapper, InputStream, StartResponse  # noqa: F401
from ._wsgi import import_wsgi_app  # noqa: F401


def asgi(app, *, threads=None):
    """A csgi app as an ASGI 3 application (see csgi._asgi.asgi); asyncio is imported on first use."""
    from ._asgi import asgi as make
    return make(app, threads=threads)


def from_asgi(app, **options):
    """An ASGI 3 app as a csgi.App (see csgi._asgi_host.from_asgi); asyncio is imported on first use."""
    from ._asgi_host import from_asgi as make
    return make(app, **options)


def __getattr__(name):
    if name == "LifespanFailed":
        from ._asgi_host import LifespanFailed
        return LifespanFailed
    raise AttributeError("module 'csgi' has no attribute %r" % name)

try:  # present when the module was built with the standalone adapter
    from ._csgi import serve  # noqa: F401
except ImportError:  # pragma: no cover
    pass
from . import testing  # noqa: F401

try:  # present when the module was built with the middleware layer
    from ._csgi import mw, static  # noqa: F401
except ImportError:  # pragma: no cover
    pass

__version__ = "0.1.0"
