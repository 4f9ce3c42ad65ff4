"""What the standalone process tests (reload, upgrade, systemd) share: a pass/fail checklist and the body
of a 200 answer."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from fetch import fetch, split_answer  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
    return cond


def get_ok(port, path="/hello"):
    """The body of a 200 answer to GET `path`; OSError for any other answer."""
    data = fetch(port, path)
    status, _, body = split_answer(data)
    if status != 200:
        raise OSError("bad response: %r" % data[:200])
    return body.decode()
