"""ahit: awaitable, off the event loop for Redis, errors delivered to the awaiting task."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

import ratewarden
from redis_server import RedisServer


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
    # Pool threads must not take the GIL of a finalizing interpreter: exit waits for them, then ends cleanly.
    code = (
        "import ratewarden;"
        f"l = ratewarden.Limiter('100/minute', '{slow_redis}');"
        "[l.hit_async(f'k{i}', 1, lambda d, e: None) for i in range(20)]"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert (result.returncode, result.stderr) == (0, "")
