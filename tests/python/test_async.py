"""ahit: awaitable, off the event loop for Redis, errors delivered to the awaiting task."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

import ratewarden
from redis_server import RedisCluster, RedisServer


def test_ahit_matches_hit(store_url: str) -> None:
    limiter = ratewarden.Limiter("3/minute", store_url, prefix="async")
    limiter.reset("a")

    async def main() -> list:
        return [await limiter.ahit("a") for _ in range(4)]

    assert [d.allowed for d in asyncio.run(main())] == [True, True, True, False]


def test_ahit_does_not_block_the_loop(redis: RedisServer) -> None:
    limiter = ratewarden.Limiter("1000000/minute", redis.url, prefix="async-loop")

    async def main() -> int:
        ticks = 0
        stop = False

        async def ticker() -> None:
            nonlocal ticks
            while not stop:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        decisions = await asyncio.gather(*(limiter.ahit(f"k{i}") for i in range(200)))
        stop = True
        await task
        assert all(decisions)
        return ticks

    assert asyncio.run(main()) > 1  # the loop ran other tasks while the hits were in flight


def test_ahit_raises_store_errors_and_bad_input(own_redis: RedisServer) -> None:
    limiter = ratewarden.Limiter("5/minute", own_redis.url + "?timeout=200ms&connect_timeout=200ms")
    own_redis.kill()

    async def main() -> None:
        with pytest.raises(ratewarden.StoreError):
            await limiter.ahit("k")
        with pytest.raises(ratewarden.InvalidArgumentError):
            await limiter.ahit("")
        with pytest.raises(TypeError):
            await limiter.ahit(3)  # type: ignore[arg-type]

    asyncio.run(main())


def test_cancelled_ahit_is_harmless(redis: RedisServer) -> None:
    limiter = ratewarden.Limiter("1000/minute", redis.url, prefix="async-cancel")

    async def main() -> None:
        task = asyncio.ensure_future(limiter.ahit("k"))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.05)  # the hit finishes on the pool; its result is dropped

    asyncio.run(main())
    time.sleep(0.05)


def test_exit_with_calls_in_flight(slow_redis: str) -> None:
    # Calls still in flight when the interpreter exits: the I/O thread never takes the GIL, so exit is clean.
    code = (
        "import asyncio, ratewarden;"
        f"l = ratewarden.Limiter('100/minute', '{slow_redis}');"
        "loop = asyncio.new_event_loop();"
        "[loop.create_task(l.ahit(f'k{i}')) for i in range(20)];"
        "loop.run_until_complete(asyncio.sleep(0.01))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert "Error" not in result.stderr and "Fatal" not in result.stderr, result.stderr


def test_loops_closed_with_calls_in_flight_leak_nothing(slow_redis: str) -> None:
    # asyncio.run ending while calls are on their way, 200 times: each loop's eventfd closes with the loop (not when
    # its calls come back), the loop itself is freed once they do (their answers are dropped: the futures they would
    # settle were cancelled), and every call still reaches the store.
    code = f"""
import asyncio, gc, os, time, weakref, ratewarden
limiter = ratewarden.Limiter("1000000/minute", "{slow_redis}", prefix="closed-loops")
loops = []

async def launch():
    loops.append(weakref.ref(asyncio.get_running_loop()))
    for _ in range(20):
        asyncio.ensure_future(limiter.ahit("k"))
    await asyncio.sleep(0)

async def one():  # as many in flight as launch(): every connection of the pool is open before counting
    await asyncio.gather(*(limiter.ahit(f"w{{i}}") for i in range(20)))

asyncio.run(one())
before = len(os.listdir("/proc/self/fd"))
for _ in range(200):
    asyncio.run(launch())
fds = len(os.listdir("/proc/self/fd")) - before
# Every call launched comes back within DELAY_S, on a quiet machine: waited for (a leak never goes), not assumed.
deadline = time.monotonic() + 30
while True:
    asyncio.run(one())  # releases the futures that came back to closed loops
    gc.collect()
    alive, used = sum(r() is not None for r in loops), limiter.peek("k").limit - limiter.peek("k").remaining
    if (alive == 0 and used == 4000) or time.monotonic() > deadline:
        break
    time.sleep(0.05)
print(fds, alive, used, len(os.listdir("/proc/self/fd")) - before)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr
    fds, alive, used, fds_at_end = map(int, result.stdout.split())
    assert fds <= 0, f"{fds} descriptors more right after 200 loops closed with 20 calls in flight each"
    assert fds_at_end <= 0, f"{fds_at_end} descriptors more once their calls came back"
    assert alive == 0, f"{alive} of 200 closed loops still alive"
    assert used == 4000, f"{used} of the 4000 hits launched reached the store"
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr


def test_apeek_areset_ahit_many_match_their_sync_forms(store_url: str) -> None:
    limiter = ratewarden.Limiter("2/minute", store_url, prefix="async-forms")
    limiter.reset("a")
    limiter.reset("b")

    async def main() -> None:
        assert [d.allowed for d in await limiter.ahit_many(["a", "a", "b"])] == [True, True, True]
        peeked = await limiter.apeek("a")
        assert (peeked.allowed, peeked.used) == (False, 2)
        assert await limiter.areset("a") is None
        assert (await limiter.apeek("a")).used == 0
        assert await limiter.ahit_many([]) == []
        with pytest.raises(ratewarden.InvalidArgumentError):
            await limiter.ahit_many(["ok", ""])
        with pytest.raises(TypeError):
            await limiter.ahit_many("ab")

    asyncio.run(main())


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_a_flood_of_calls_in_flight_costs_no_threads(redis: RedisServer) -> None:
    limiter = ratewarden.Limiter("50000/minute", redis.url + "?timeout=30s", prefix="async-flood")

    async def main(n: int) -> list:
        return await asyncio.gather(*(limiter.ahit(f"k{i % 1000}") for i in range(n)))

    asyncio.run(main(10))  # the library's threads start with its first network call
    before = _threads()
    decisions = asyncio.run(main(100_000))
    assert _threads() == before
    assert sum(d.allowed for d in decisions) == 100_000  # 100 per key, well within 50,000
    assert sum(d.allowed for d in asyncio.run(main(10_000))) == 10_000 - 0
    assert _threads() == before


def test_ahit_many_tasks_on_a_cluster_all_settle(cluster: RedisCluster) -> None:
    # The hang of the thread-pool design: batches on a cluster parked pool threads waiting for other pool threads.
    limiters = [ratewarden.Limiter(f"{1000 + i}/minute", cluster.url + "?timeout=5s", prefix="async-cluster")
                for i in range(20)]

    async def main() -> list:
        return await asyncio.gather(
            *(limiters[t % 20].ahit_many([f"k{t}-{j}" for j in range(10)]) for t in range(200))
        )

    start = time.monotonic()
    batches = asyncio.run(asyncio.wait_for(main(), 30))
    assert time.monotonic() - start < 10
    assert len(batches) == 200 and all(len(b) == 10 and all(b) for b in batches)
