"""In-process call costs: ratewarden against limits (every strategy; the fastest one is the reference), on the
memory store over 10k keys (and its CPU cost amid 4 busy threads) and on Redis with 1 and 8 threads. Prints one
JSON object per measurement."""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from typing import Callable, List

import limits
import redis as redis_py
from limits import storage, strategies

import ratewarden

REDIS = sys.argv[1]
KEYS = [f"user{i}" for i in range(10_000)]
POLICY = "1000000000/minute"
ITEM = limits.parse(POLICY)
REPEATS = 5
STRATEGIES = {
    "fixed": strategies.FixedWindowRateLimiter,
    "moving": strategies.MovingWindowRateLimiter,
    "sliding": strategies.SlidingWindowCounterRateLimiter,
}


def per_call_us(run: Callable[[], int]) -> float:
    """Median over REPEATS runs of the wall time per call, in µs."""
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        calls = run()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def loop(call: Callable[[str], object], keys: List[str]) -> Callable[[], int]:
    def run() -> int:
        for k in keys:
            call(k)
        return len(keys)

    return run


def threaded(call: Callable[[str], object], threads: int, per_thread: int) -> Callable[[], int]:
    def run() -> int:
        workers = [
            threading.Thread(target=loop(call, KEYS[t * per_thread:(t + 1) * per_thread])) for t in range(threads)
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return threads * per_thread

    return run


def report(name: str, us: float) -> None:
    print(json.dumps({"name": name, "us": us}), flush=True)


def memory() -> None:
    rw = ratewarden.Limiter(POLICY, "memory://", prefix="bench")
    report("rw.memory.hit", per_call_us(loop(rw.hit, KEYS * 5)))
    report("rw.memory.allow", per_call_us(loop(rw.allow, KEYS * 5)))
    for name, cls in STRATEGIES.items():
        lim = cls(storage.MemoryStorage())
        report(f"limits.memory.{name}", per_call_us(loop(lambda k, lim=lim: lim.hit(ITEM, k), KEYS * 2)))


def contended_cpu_us(call: Callable[[str], object]) -> float:
    """CPU the process spends per call while 4 threads run Python between calls, as a threaded server's do; the
    median of REPEATS runs, minus the same loop without the call."""

    def cpu_per_iteration(fn: Callable[[str], object]) -> float:
        def work() -> None:
            for _ in range(10_000):
                for _ in range(300):  # ~10 µs of Python between calls
                    pass
                fn("k")

        workers = [threading.Thread(target=work) for _ in range(4)]
        start = time.process_time()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return (time.process_time() - start) / 40_000 * 1e6

    return statistics.median(cpu_per_iteration(call) - cpu_per_iteration(lambda k: None) for _ in range(REPEATS))


def contended() -> None:
    rw = ratewarden.Limiter(POLICY, "memory://", prefix="bench-contended")
    report("contended.rw", contended_cpu_us(rw.hit))
    lim = strategies.FixedWindowRateLimiter(storage.MemoryStorage())
    report("contended.limits", contended_cpu_us(lambda k: lim.hit(ITEM, k)))


def redis() -> None:
    rw = ratewarden.Limiter(POLICY, REDIS, prefix="bench")
    report("rw.redis.hit.1", per_call_us(loop(rw.hit, KEYS[:3000])))
    report("rw.redis.hit.8", per_call_us(threaded(rw.hit, 8, 1000)))
    for name, cls in STRATEGIES.items():
        lim = cls(storage.RedisStorage(REDIS, key_prefix=f"LIMITS-{name}"))  # each strategy its own key types
        hit = lambda k, lim=lim: lim.hit(ITEM, k)  # noqa: E731
        report(f"limits.redis.{name}.1", per_call_us(loop(hit, KEYS[:3000])))
        report(f"limits.redis.{name}.8", per_call_us(threaded(hit, 8, 1000)))


def floor() -> None:
    """The round trip under every synchronous Redis call from one thread, ours and limits' alike: redis-py's PING
    (no script, no key), on the same server in the same run."""
    client = redis_py.Redis.from_url(REDIS)
    report("floor.redis.ping.1", per_call_us(loop(lambda k: client.ping(), KEYS[:3000])))


if __name__ == "__main__":
    memory()
    contended()
    redis()
    floor()
