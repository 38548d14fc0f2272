"""In-process call costs: ratewarden against limits (every strategy; the fastest one is the reference), on the
memory store over 10k keys (and its CPU cost amid 4 busy threads) and on Redis with 1 and 8 threads. Prints one
JSON object per measurement."""

from __future__ import annotations

import json
import socket
import statistics
import sys
import threading
import time
from typing import Callable, List
from urllib.parse import urlparse

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


def run_us(run: Callable[[], int]) -> float:
    """The wall time per call of one run, in µs."""
    start = time.perf_counter()
    calls = run()
    return (time.perf_counter() - start) / calls * 1e6


def per_call_us(run: Callable[[], int]) -> float:
    """Median over REPEATS runs of the wall time per call, in µs."""
    return statistics.median(run_us(run) for _ in range(REPEATS))


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
    """Ours, limits' strategies and the floors, one thread then 8, each measure of a round taken in turn (REPEATS
    rounds): the machine's other load falls on every side of a ratio alike."""
    rw = ratewarden.Limiter(POLICY, REDIS, prefix="bench")
    one = {"rw.redis.hit.1": loop(rw.hit, KEYS[:3000])}
    eight = {"rw.redis.hit.8": threaded(rw.hit, 8, 1000)}
    for name, cls in STRATEGIES.items():
        lim = cls(storage.RedisStorage(REDIS, key_prefix=f"LIMITS-{name}"))  # each strategy its own key types
        hit = lambda k, lim=lim: lim.hit(ITEM, k)  # noqa: E731
        one[f"limits.redis.{name}.1"] = loop(hit, KEYS[:3000])
        eight[f"limits.redis.{name}.8"] = threaded(hit, 8, 1000)
    client = redis_py.Redis.from_url(REDIS)
    one["floor.redis.ping.1"] = loop(lambda k: client.ping(), KEYS[:3000])
    one["floor.redis.raw.1"] = loop(raw_minimal_script(), KEYS[:3000])
    for runs in (one, eight):
        samples: dict = {name: [] for name in runs}
        for _ in range(REPEATS):
            for name, run in runs.items():
                samples[name].append(run_us(run))
        for name, values in samples.items():
            report(name, statistics.median(values))


# The minimal fixed window (INCRBY, PEXPIRE on the first hit) as a user would write it by hand.
MINIMAL_SCRIPT = (b"local c = redis.call('INCRBY', KEYS[1], ARGV[1]) "
                  b"if c == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return c")


def raw_minimal_script() -> Callable[[str], object]:
    """The least a decision on Redis can cost from Python, the floor of ours and of limits' alike: the minimal
    fixed-window script by EVALSHA through a bare socket, its commands encoded beforehand, each reply (one short
    integer, one segment on loopback) read but not parsed."""
    url = urlparse(REDIS)
    sock = socket.create_connection((url.hostname or "127.0.0.1", url.port or 6379))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def command(*args: bytes) -> bytes:
        return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)

    sock.sendall(command(b"SCRIPT", b"LOAD", MINIMAL_SCRIPT))
    sha = sock.recv(4096).split(b"\r\n")[1]
    encoded = {k: command(b"EVALSHA", sha, b"1", b"raw-" + k.encode(), b"1", b"60000") for k in KEYS}
    send, recv = sock.sendall, sock.recv

    def hit(k: str) -> bytes:
        send(encoded[k])
        return recv(64)

    return hit


if __name__ == "__main__":
    memory()
    contended()
    redis()
