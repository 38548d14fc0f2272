"""One Python process of the pacing benchmark (bench/pacing/pacing.py):

    client.py LIBRARY REDIS_URL KEY RATE BURST RECORDER_URL START_AT DURATION NAME THREADS

LIBRARY is `ratewarden` (Limiter.acquire: a reservation, then a sleep) or `pyrate` (pyrate-limiter's blocking
try_acquire on a RedisBucket, a sliding log of RATE per second). From START_AT (time.time()) each of THREADS threads
loops until START_AT + DURATION: wait for a slot, then GET RECORDER_URL/NAME/thread if the deadline has not passed
(warmed up first: the store connected, each thread's HTTP connection used once on /warmup/).
Prints one JSON line: calls sent, the CPU seconds of the run, and when each sent call's wait ended (time.time()).
"""
from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from typing import Callable, List
from urllib.parse import urlsplit

library, redis_url, key, rate, burst, recorder, start_at, duration, name, threads = sys.argv[1:11]
START, DEADLINE = float(start_at), float(start_at) + float(duration)
HOST, PORT = urlsplit(recorder).hostname, urlsplit(recorder).port


def ratewarden_waiter() -> Callable[[], bool]:
    import ratewarden

    limiter = ratewarden.Limiter(f"{rate}/second", redis_url, algorithm="gcra", burst=int(burst))
    limiter.peek(key)  # connected before the start (a peek charges nothing)

    def wait() -> bool:
        try:
            limiter.acquire(key, timeout=max(0.0, DEADLINE - time.time()))
            return True
        except ratewarden.RateLimitTimeout:
            return False
    return wait


def pyrate_waiter() -> Callable[[], bool]:
    from pyrate_limiter import Duration, Limiter, Rate, RedisBucket
    from redis import Redis

    where = urlsplit(redis_url)
    bucket = RedisBucket.init([Rate(int(rate), Duration.SECOND)], Redis(where.hostname, where.port), key)  # connects
    limiter = Limiter(bucket)
    return lambda: bool(limiter.try_acquire(key, blocking=True))


wait = {"ratewarden": ratewarden_waiter, "pyrate": pyrate_waiter}[library]()
released: List[float] = []  # time.time() when each sent call's wait ended
lock = threading.Lock()


def caller(i: int, connection: http.client.HTTPConnection) -> None:
    while time.time() < DEADLINE and wait():
        now = time.time()
        if now >= DEADLINE:
            break
        connection.request("GET", f"/{name}/thread{i}")
        connection.getresponse().read()
        with lock:
            released.append(now)
    connection.close()


connections = [http.client.HTTPConnection(HOST, PORT, timeout=10) for _ in range(int(threads))]
for i, connection in enumerate(connections):  # each caller's connection open and used once before the start
    connection.request("GET", f"/warmup/{name}/thread{i}")
    connection.getresponse().read()
time.sleep(max(0.0, START - time.time()))
cpu = time.process_time()
workers = [threading.Thread(target=caller, args=(i, c), daemon=True) for i, c in enumerate(connections)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
print(json.dumps({"calls": len(released), "cpu_s": time.process_time() - cpu, "released": released}))
