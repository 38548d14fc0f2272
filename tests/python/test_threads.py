"""Threads: one limiter shared by many threads enforces its limit exactly, and store calls run without the GIL."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import ratewarden
from conftest import DELAY_S


def test_eight_threads_get_exactly_the_limit(store_url: str) -> None:
    limiter = ratewarden.Limiter("1000/minute", store_url, prefix="threads")
    limiter.reset("hot")

    def worker(_: int) -> int:
        return sum(limiter.hit("hot").allowed for _ in range(400))

    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(worker, range(8))) == 1000  # 3200 tries


@pytest.mark.parametrize("method", ["hit", "allow", "peek"])
def test_redis_calls_run_concurrently(slow_redis: str, method: str) -> None:
    limiter = ratewarden.Limiter("1000000/minute", slow_redis, prefix="gil")
    call = getattr(limiter, method)
    calls = 6
    limiter.hit("warm")  # connects once outside the timing

    def run(n: int) -> float:
        start = time.perf_counter()
        for i in range(calls):
            call(f"t{n}-{i}")
        return time.perf_counter() - start

    one = run(-1)
    assert one >= calls * DELAY_S
    start = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(run, range(4)))
    four = time.perf_counter() - start
    # With the GIL held across the call, four threads would take 4x one thread's time.
    assert four < 2 * one, f"4 threads took {four:.3f} s, one thread {one:.3f} s"


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
