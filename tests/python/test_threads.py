"""Threads: one limiter shared by many threads enforces its limit exactly, and store calls run without the GIL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

import ratewarden
from gate_proxy import GateProxy


def test_eight_threads_get_exactly_the_limit(store_url: str) -> None:
    limiter = ratewarden.Limiter("1000/minute", store_url, prefix="threads")
    limiter.reset("hot")

    def worker(_: int) -> int:
        return sum(limiter.hit("hot").allowed for _ in range(400))

    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(worker, range(8))) == 1000  # 3200 tries


@pytest.mark.parametrize("method", ["hit", "allow", "peek"])
def test_redis_calls_run_concurrently(gated_redis: GateProxy, method: str) -> None:
    limiter = ratewarden.Limiter("1000000/minute", gated_redis.url, prefix="gil")
    call = getattr(limiter, method)
    limiter.hit("warm")  # connects before the gate shuts
    keys = [f"gil-{method}-{i}." for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        with gated_redis.shut():
            calls = [pool.submit(call, k) for k in keys]
            # With the GIL held across a call, the first call's wait would keep the other threads from making theirs
            # (and the gate's threads, in this process, from reading it: the test would fail once that call timed out).
            assert gated_redis.wait_held(k.encode() for k in keys), "the four calls were never in flight at once"
            assert not any(c.done() for c in calls)
        for c in calls:
            c.result()


_DAEMONS_IN_STORE_CALLS_AT_EXIT = """
import sys, threading, time
import ratewarden

limiter = ratewarden.Limiter("1000000/minute", sys.argv[1], prefix="exit", on_store_error="allow")
methods = [limiter.hit, limiter.allow, limiter.peek, limiter.refund, limiter.reset, lambda k: limiter.hit_many([k]),
           lambda k: ratewarden.KeyList("exit", limiter.store).contains(k)]
for i, method in enumerate(methods * 2):
    def loop(method=method, i=i):
        while True:
            method(f"k{i}")
    threading.Thread(target=loop, daemon=True).start()
time.sleep(0.2)
"""


@pytest.mark.parametrize("store", ["slow", "dead"])
def test_exit_with_daemon_threads_in_store_calls(slow_redis: str, store: str) -> None:
    # Daemon threads in every kind of blocking call (the GIL released) when the interpreter exits: Python ends each
    # one as it comes back for the GIL (pthread_exit), which must unwind cleanly, never abort the process.
    import subprocess
    import sys

    from redis_server import free_port

    url = slow_redis if store == "slow" else f"redis://127.0.0.1:{free_port()}?connect_timeout=20ms&circuit_backoff=5ms"
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", _DAEMONS_IN_STORE_CALLS_AT_EXIT, url], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0 and "terminate called" not in done.stderr, (done.returncode, done.stderr)
