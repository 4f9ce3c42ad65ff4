"""A C++ stack exposed as a WSGI app for real hosts (gunicorn, uWSGI). Every request passes through
wsgiref.validate with warnings as errors: a violation answers 500 (and is logged) instead of 200."""
import os
import warnings
import wsgiref.validate

import csgi

warnings.simplefilter("error")
_stack = csgi.load_app(os.environ["CSGI_TEST_APPS"], [os.environ.get("CSGI_HOSTED_APP", "stack")])
_validated = wsgiref.validate.validator(_stack)


def application(environ, start_response):
    try:
        return _validated(environ, start_response)
    except Exception as e:  # report the violation in the response so the test can show it
        import traceback
        text = traceback.format_exc().encode()
        start_response("599 Validation Failed", [("Content-Type", "text/plain")], __import__("sys").exc_info())
        return [text]
