"""Helpers for hosting Python WSGI apps on the csgi adapters."""
import importlib
import os
import sys


def import_wsgi_app(spec, cwd=None):
    """Imports ``"package.module:attr"`` (``attr`` may be ``a.b`` or a call ``make_app()``; without
    ``:attr``, ``application`` then ``app``) and returns the WSGI callable, as gunicorn does."""
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
    return obj
