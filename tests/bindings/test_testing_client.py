"""csgi.testing.call with delayed responses answered later from another thread (RES-8 allows any thread,
now or later): the call waits for them, up to its timeout."""
import time

import pytest

import csgi.testing


def test_a_delayed_response_answered_later_from_another_thread(load):
    r = csgi.testing.call(load("later", "200"), "GET /")
    assert r.status == 200 and r.body == b"later"


def test_a_writer_started_on_another_thread_is_read_to_its_close(load):
    r = csgi.testing.call(load("writer"), "GET /")
    assert r.status == 200 and r.streamed and r.closed
    assert r.body == b"".join(b"part%d\n" % i for i in range(5))


def test_the_wait_is_bounded_by_the_timeout(load):
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="not answered within"):
        csgi.testing.call(load("later", "3000"), "GET /", timeout=0.3)
    assert time.monotonic() - start < 2.5
    with pytest.raises(ValueError):
        csgi.testing.call(load("hello"), "GET /", timeout=0)
