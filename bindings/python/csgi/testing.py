"""In-memory calls of csgi apps, as an adapter would make them (csgi::testing::call).

    r = csgi.testing.call(app, "POST /x?y=1", [("Content-Type", "text/plain")], b"body")
    r.status, r.headers, r.body, r.errors, r.streamed, r.closed, r.file

A delayed response answered later from another thread is waited for, at most `timeout` seconds
(default 30; then RuntimeError).
"""
from ._csgi import testing as _native

call = _native.call
TestResponse = _native.TestResponse
__all__ = ["call", "TestResponse"]
