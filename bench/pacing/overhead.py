"""Per-acquire overhead when no wait is needed, in Python (bench/pacing/pacing.py runs it):

    overhead.py REDIS_URL CALLS ROUNDS

Each operation runs in batches (50 calls on Redis, 20,000 on the memory store), the operations of one store taking
turns batch by batch so that a loaded machine slows them alike, CALLS x ROUNDS calls each on Redis; prints one JSON
object: the median over the batches of the µs per call of each.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Callable, Dict, List
from urllib.parse import urlsplit

import ratewarden
from pyrate_limiter import Duration, Limiter, Rate, RedisBucket
from redis import Redis

redis_url, calls, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
HUGE = 10**9  # never reached: no call waits

ours = {store: ratewarden.Limiter(f"{HUGE}/hour", url, algorithm="gcra", prefix="overhead")
        for store, url in (("redis", redis_url), ("memory", "memory://"))}
where = urlsplit(redis_url)
pyrate = Limiter(RedisBucket.init([Rate(HUGE, Duration.HOUR)], Redis(where.hostname, where.port), "overhead-pyrate"))

redis_ops: Dict[str, Callable[[], object]] = {}
memory_ops: Dict[str, Callable[[], object]] = {}
for store, limiter in ours.items():
    group = redis_ops if store == "redis" else memory_ops
    group[f"ratewarden {store} hit"] = lambda limiter=limiter: limiter.hit("k")
    group[f"ratewarden {store} reserve"] = lambda limiter=limiter: limiter.reserve("k")
    group[f"ratewarden {store} acquire"] = lambda limiter=limiter: limiter.acquire("k")
redis_ops["pyrate try_acquire(blocking=False)"] = lambda: pyrate.try_acquire("k", blocking=False)
redis_ops["pyrate try_acquire(blocking=True)"] = lambda: pyrate.try_acquire("k", blocking=True)


def medians(operations: Dict[str, Callable[[], object]], batch: int, batches: int) -> Dict[str, float]:
    samples: Dict[str, List[float]] = {name: [] for name in operations}
    for _ in range(batches):
        for name, operation in operations.items():
            start = time.perf_counter()
            for _ in range(batch):
                operation()
            samples[name].append((time.perf_counter() - start) / batch * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


print(json.dumps({**medians(redis_ops, 50, calls * rounds // 50), **medians(memory_ops, 20000, 2 * rounds + 1)}))
