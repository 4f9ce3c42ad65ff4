"""Helpers for hosting Python WSGI apps on the csgi adapters."""
import importlib
import inspect
import os
import sys


def import_wsgi_app(spec, cwd=None, kind=None):
    """Imports ``"package.module:attr"`` (``attr`` may be ``a.b`` or a call ``make_app()``; without
    ``:attr``, ``application`` then ``app``) and returns the WSGI callable, as gunicorn does. ``kind``
    (``"wsgi"`` or ``"asgi"``): a callable that is plainly of the other kind raises TypeError."""
    if cwd is None:
        cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    module_name, _, attr = spec.partition(":")
    if not module_name:
        raise ValueError("expected module:app, got %r" % spec)
    module = importlib.import_module(module_name)
    if not attr:
        for candidate in ("application", "app"):
            if hasattr(module, candidate):
                attr = candidate
                break
        else:
            raise LookupError("%s has neither `application` nor `app`" % module_name)
    call = attr.endswith("()")
    if call:
        attr = attr[:-2]
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    if call:
        obj = obj()
    if not callable(obj):
        raise TypeError("%s is not callable" % spec)
    if kind is not None and app_kind(obj) not in (None, kind):
        raise TypeError("%s is %s app, not %s one: serve it with --%s" % (
            spec, _KIND_NAMES[app_kind(obj)], _KIND_NAMES[kind], app_kind(obj)))
    return obj


_KIND_NAMES = {"wsgi": "a WSGI", "asgi": "an ASGI"}


def app_kind(obj):
    """``"asgi"`` for a callable whose call is a coroutine function (an ASGI 3 app), ``"wsgi"`` for a plain
    callable that takes exactly two arguments (environ, start_response), ``None`` when it cannot be told."""
    call = obj if inspect.isroutine(obj) else getattr(obj, "__call__", None)
    if inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(call):
        return "asgi"
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None

    def takes(n):
        try:
            signature.bind(*range(n))
            return True
        except TypeError:
            return False
    return "wsgi" if takes(2) and not takes(3) else None
