"""Pacing (docs/pacing.md): acquire / aacquire / paced wait for the slot a reservation charged, on the memory store,
one Redis, a Redis Cluster and PostgreSQL alike. A wait never ends early, a timeout raises at once without charging, and a
cancelled or interrupted wait gives its slot back unless a later reservation was charged on the key meanwhile."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import List

import pytest

import ratewarden
from ratewarden import InvalidArgumentError, Limiter, RateLimitTimeout
from redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]
EARLY = 0.003  # the store's clock (Redis TIME) against time.monotonic: a wait may look this much early, no more


@pytest.fixture(params=["memory", "redis", "cluster", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    return request.getfixturevalue(request.param).url + ("?timeout=5s" if request.param == "postgres" else "")


def next_slot_after_the_first(limiter: Limiter, first_returned: float) -> float:
    """A new reservation's slot in seconds after the first acquire returned (when slot 0 had come, give or take the
    answer's latency): about 0.2 when slot 1 (of a 5/second key) was given back, 0.4 when it stayed spent."""
    wait = limiter.reserve("k").wait
    return wait + (time.monotonic() - first_returned)


def paced_limiter(url: str, policy: str = "5/second", burst: int = 1, algorithm: str = "gcra") -> Limiter:
    """A limiter of its own (a fresh prefix): one slot every period/limit, `burst` at once."""
    return Limiter(policy, url, algorithm=algorithm, burst=burst, prefix=f"pace-{uuid.uuid4().hex[:8]}")


@pytest.mark.parametrize("algorithm", ["gcra", "token_bucket"])
def test_acquire_sleeps_until_its_slot(url: str, algorithm: str) -> None:
    limiter = paced_limiter(url, "20/second", algorithm=algorithm)  # a slot every 50 ms
    start = time.monotonic()
    waits = [limiter.acquire("k").wait for _ in range(3)]
    elapsed = time.monotonic() - start
    assert waits[0] == 0.0
    assert all(w <= 0.05 for w in waits)  # less when a round trip took some of it
    assert elapsed >= 0.1 - EARLY  # the third slot: two periods after the first
    assert limiter.peek("k").retry_after > 0  # the third slot was charged: the key is busy


def test_threads_are_served_one_slot_each_never_early(url: str) -> None:
    limiter = paced_limiter(url, "50/second")  # a slot every 20 ms
    barrier = threading.Barrier(10)
    returned: List[float] = []
    start = time.monotonic()

    def caller() -> None:
        barrier.wait()
        limiter.acquire("k")
        returned.append(time.monotonic() - start)

    threads = [threading.Thread(target=caller) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, at in enumerate(sorted(returned)):  # the k-th slot lies k periods after the first reservation
        assert at >= k * 0.02 - EARLY
    assert max(returned) < 9 * 0.02 + 1.0  # nobody waited for a slot that was not theirs


def test_asyncio_tasks_are_served_one_slot_each_never_early(url: str) -> None:
    limiter = paced_limiter(url, "50/second")

    async def main() -> List[float]:
        loop = asyncio.get_running_loop()
        start = loop.time()

        async def caller() -> float:
            await limiter.aacquire("k")
            return loop.time() - start
        return await asyncio.gather(*(caller() for _ in range(10)))

    returned = asyncio.run(main())
    for k, at in enumerate(sorted(returned)):
        assert at >= k * 0.02 - EARLY
    assert max(returned) < 9 * 0.02 + 1.0


def test_a_wait_is_one_reservation_and_a_timer_not_polling(own_redis: RedisServer) -> None:
    limiter = paced_limiter(own_redis.url, "20/second")
    limiter.acquire("warm-up")  # loads the script

    def commands() -> int:  # scripts run (the commands inside them are counted apart)
        stats = own_redis.cli("info", "commandstats")
        return sum(int(m) for m in re.findall(r"^cmdstat_eval(?:sha)?:calls=(\d+)", stats, re.MULTILINE))

    before = commands()
    for _ in range(5):
        limiter.acquire("k")  # 4 waits of 50 ms

    async def tasks() -> None:
        await asyncio.gather(*(limiter.aacquire("k2") for _ in range(5)))
    asyncio.run(tasks())
    assert commands() - before == 10  # one script per acquire: no retries


def test_timeout_raises_at_once_and_charges_nothing(url: str) -> None:
    limiter = paced_limiter(url, "1/second")  # a slot every second
    assert limiter.acquire("k", timeout=0).wait == 0.0  # a free slot passes a zero timeout
    before = limiter.peek("k")
    start = time.monotonic()
    with pytest.raises(RateLimitTimeout) as caught:
        limiter.acquire("k", timeout=0.6)
    assert time.monotonic() - start < 0.4  # at once, not after the timeout (0.6 s) or the wait (1 s)
    error = caught.value
    assert isinstance(error, TimeoutError) and isinstance(error, ratewarden.Error)
    assert error.code == "rate_limit_timeout" and error.timeout == 0.6
    assert not error.decision.allowed and 0.6 < error.retry_after <= 1.0
    assert "0.6 s" in str(error) and "'k'" in str(error)
    after = limiter.peek("k")
    assert after.remaining == before.remaining and after.retry_after <= before.retry_after
    # Nothing was charged: the next slot is still the one right after the first (under 1 s away), not one further.
    assert limiter.reserve("k", max_wait=1.0).allowed


def test_aacquire_timeout_raises_at_once_and_charges_nothing(url: str) -> None:
    limiter = paced_limiter(url, "2/second")

    async def main() -> None:
        await limiter.aacquire("k")
        start = time.monotonic()
        with pytest.raises(RateLimitTimeout) as caught:
            await limiter.aacquire("k", timeout=0.3)
        assert time.monotonic() - start < 0.25  # at once, not after the timeout (0.3 s) or the wait (0.5 s)
        assert caught.value.decision.retry_after > 0.3
        assert (await limiter.aacquire("k", timeout=0.5)).wait <= 0.5  # not charged by the refusal
    asyncio.run(main())


def test_a_cancelled_task_gives_its_slot_back(url: str) -> None:
    limiter = paced_limiter(url, "5/second")  # a slot every 200 ms

    async def main() -> float:
        await limiter.aacquire("k")
        first_returned = time.monotonic()
        waiter = asyncio.ensure_future(limiter.aacquire("k"))
        await asyncio.sleep(0.05)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        return first_returned
    # The slot 200 ms after the first is free again: the next reservation takes it, not the one after it.
    assert next_slot_after_the_first(limiter, asyncio.run(main())) < 0.3


def test_a_cancelled_wait_keeps_its_slot_when_a_later_one_was_charged(url: str) -> None:
    limiter = paced_limiter(url, "5/second")

    async def main() -> None:
        start = time.monotonic()
        await limiter.aacquire("k")  # slot 0
        first = asyncio.ensure_future(limiter.aacquire("k"))  # slot 1, 200 ms after slot 0
        await asyncio.sleep(0.02)
        second = asyncio.ensure_future(limiter.aacquire("k"))  # slot 2, 400 ms
        await asyncio.sleep(0.03)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        # Giving slot 1 back would let a newcomer take it ahead of the second caller: it stays spent, and the next
        # reservation is slot 3, 600 ms after slot 0 (which was no earlier than start).
        wait = (await limiter.areserve("k")).wait
        assert wait + (time.monotonic() - start) >= 0.6 - EARLY
        assert (await second).allowed
    asyncio.run(main())


def test_asyncio_timeout_around_aacquire_gives_the_slot_back(url: str) -> None:
    limiter = paced_limiter(url, "5/second")

    async def main() -> float:
        await limiter.aacquire("k")
        first_returned = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(limiter.aacquire("k"), 0.05)
        return first_returned
    assert next_slot_after_the_first(limiter, asyncio.run(main())) < 0.3


def test_a_task_cancelled_while_the_store_answers_gives_the_slot_back(slow_redis: str) -> None:
    limiter = paced_limiter(slow_redis, "5/second", burst=2)  # every call takes 50 ms more

    async def main() -> None:
        waiter = asyncio.ensure_future(limiter.aacquire("k"))
        await asyncio.sleep(0.01)  # the reservation is on its way
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await asyncio.sleep(0.3)  # its answer comes, then the give-back
        assert (await limiter.apeek("k")).remaining == 2
    asyncio.run(main())


def test_an_interrupted_sleep_gives_the_slot_back(url: str) -> None:
    limiter = paced_limiter(url, "5/second")

    class Interrupted(Exception):
        pass

    def interrupt(*_: object) -> None:
        raise Interrupted

    limiter.acquire("k")
    first_returned = time.monotonic()
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(Interrupted):
            limiter.acquire("k")  # would sleep 200 ms
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert next_slot_after_the_first(limiter, first_returned) < 0.3  # slot 1 was given back


def test_paced_decorates_functions_and_coroutine_functions(url: str) -> None:
    limiter = paced_limiter(url, "4/second")  # a slot every 250 ms
    calls: List[str] = []

    @limiter.paced(lambda host, path: f"host:{host}")
    def get(host: str, path: str) -> str:
        calls.append(host)
        return f"{host}{path}"

    start = time.monotonic()
    assert get("a", "/1") == "a/1" and get("b", "/1") == "b/1"  # two keys: no wait
    assert time.monotonic() - start < 0.2
    assert get("a", "/2") == "a/2"  # waits for host a's next slot
    assert time.monotonic() - start >= 0.25 - EARLY
    assert get.__name__ == "get" and calls == ["a", "b", "a"]

    @limiter.paced("async-key", timeout=1.0)
    async def fetch(n: int) -> int:
        return n * 2

    async def main() -> List[int]:
        return await asyncio.gather(*(fetch(i) for i in range(3)))
    start = time.monotonic()
    assert asyncio.run(main()) == [0, 2, 4]
    assert time.monotonic() - start >= 0.5 - EARLY


def test_paced_blocks_sync_and_async(url: str) -> None:
    limiter = paced_limiter(url, "2/second")
    paced = limiter.paced("block", timeout=0.1)
    with paced as decision:
        assert decision.allowed and decision.wait == 0.0
    ran = []
    with pytest.raises(RateLimitTimeout):
        with paced:
            ran.append(1)  # never runs: the wait would exceed the timeout
    assert ran == []

    async def main() -> None:
        async with limiter.paced("async-block") as decision:
            assert decision.allowed
        with pytest.raises(RateLimitTimeout):
            async with limiter.paced("async-block", timeout=0):
                ran.append(2)
    asyncio.run(main())
    assert ran == []
    with pytest.raises(InvalidArgumentError, match="key function"):
        with limiter.paced(lambda: "k"):
            pass


def test_bad_arguments(url: str) -> None:
    limiter = paced_limiter(url)
    for timeout, error in ((-1, InvalidArgumentError), (float("nan"), InvalidArgumentError), ("1", TypeError),
                           (True, TypeError)):
        with pytest.raises(error, match="timeout"):
            limiter.acquire("k", timeout=timeout)  # type: ignore[arg-type]
        with pytest.raises(error, match="timeout"):
            limiter.paced("k", timeout=timeout)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        limiter.acquire("")
    with pytest.raises(InvalidArgumentError):
        limiter.acquire("k", cost=0)
    assert limiter.peek("k").remaining == 1  # nothing charged


@pytest.mark.parametrize("algorithm", ["fixed_window", "sliding_window", "sliding_log"])
def test_window_algorithms_refuse_to_reserve(url: str, algorithm: str) -> None:
    limiter = Limiter("5/second", url, algorithm=algorithm, prefix=f"pace-{uuid.uuid4().hex[:8]}")
    with pytest.raises(InvalidArgumentError):
        limiter.acquire("k")
    with pytest.raises(InvalidArgumentError):
        asyncio.run(limiter.aacquire("k"))
    assert limiter.peek("k").remaining == 5


def test_a_dead_store_follows_on_store_error(own_redis: RedisServer) -> None:
    def limiter(on_store_error: str) -> Limiter:
        return Limiter("5/second", own_redis.url, algorithm="gcra", burst=1, on_store_error=on_store_error)
    raising, opening, closing = limiter("raise"), limiter("allow"), limiter("deny")
    assert raising.acquire("k").allowed  # connected
    own_redis.kill()
    with pytest.raises(ratewarden.StoreError):
        raising.acquire("k")
    assert opening.acquire("k").wait == 0.0  # fail open: go now
    with pytest.raises(RateLimitTimeout, match="on_store_error is 'deny'") as caught:
        closing.acquire("k")  # fail closed: a refusal, though no timeout was given
    assert caught.value.timeout is None

    async def main() -> None:
        with pytest.raises(ratewarden.StoreError):
            await raising.aacquire("k")
        assert (await opening.aacquire("k")).wait == 0.0
        with pytest.raises(RateLimitTimeout):
            await closing.aacquire("k")
    asyncio.run(main())


def test_deny_with_a_timeout_says_the_store_failed(own_redis: RedisServer) -> None:
    # A timeout given or not, on_store_error="deny"'s refusal is the store's: timeout None, and a message that says
    # so (not "more than the timeout of 5 s" for a wait of 1 s).
    closing = Limiter("5/second", own_redis.url + "?timeout=200ms", algorithm="gcra", burst=1, on_store_error="deny")
    assert closing.acquire("k", timeout=5).allowed  # connected
    own_redis.kill()
    for acquire in (lambda: closing.acquire("k", timeout=5), lambda: asyncio.run(closing.aacquire("k", timeout=5))):
        with pytest.raises(RateLimitTimeout, match="the store failed and on_store_error is 'deny'") as caught:
            acquire()
        assert caught.value.timeout is None
    # A wait longer than the timeout is still one, on such a limiter.
    busy = Limiter("5/second", "memory://", algorithm="gcra", burst=1, on_store_error="deny")
    busy.acquire("k")
    for acquire in (lambda: busy.acquire("k", timeout=0.05), lambda: asyncio.run(busy.aacquire("k", timeout=0.05))):
        with pytest.raises(RateLimitTimeout, match="more than the timeout of 0.05 s") as caught:
            acquire()
        assert caught.value.timeout == 0.05


def test_a_thousand_tasks_in_flight_each_get_one_slot(url: str) -> None:
    limiter = paced_limiter(url, "2000/second")  # a slot every 0.5 ms: 1000 slots in 0.5 s

    async def main() -> List[ratewarden.Decision]:
        return await asyncio.gather(*(limiter.aacquire("k") for _ in range(1000)))
    start = time.monotonic()
    decisions = asyncio.run(main())
    assert time.monotonic() - start >= 999 * 0.0005 - EARLY
    assert all(d.allowed for d in decisions)
    # One slot each: a reservation's ticket is the key's state after its slot, so no two are equal. (Their waits,
    # measured from when the store decided each one, may coincide when it decides at the pace of the slots.)
    assert len({d.ticket for d in decisions}) == 1000 and all(d.ticket > 0 for d in decisions)


def test_cancelling_every_waiter_leaves_a_usable_key(url: str) -> None:
    limiter = paced_limiter(url, "10/second")  # 100 waiters would need 10 s

    async def main() -> None:
        waiters = [asyncio.ensure_future(limiter.aacquire("k")) for _ in range(100)]
        await asyncio.sleep(0.1)
        for waiter in reversed(waiters):  # the latest first
            waiter.cancel()
        results = await asyncio.gather(*waiters, return_exceptions=True)
        assert sum(isinstance(r, asyncio.CancelledError) for r in results) >= 98  # the first ones may have run
        assert all(isinstance(r, (asyncio.CancelledError, ratewarden.Decision)) for r in results)
        wait = (await limiter.areserve("k")).wait
        # On the memory store the give-backs run in the order of the cancellations, each of the latest slot: all
        # are given back. On a network store they race to the server: those that arrive after an earlier slot's
        # stay spent, as documented, so the key is only known to be no busier than before.
        assert wait < 0.3 if limiter.store.in_process else wait <= 10.1
    asyncio.run(main())


def test_many_keys_at_once(url: str) -> None:
    limiter = paced_limiter(url, "1/minute")

    async def main() -> List[ratewarden.Decision]:
        return await asyncio.gather(*(limiter.aacquire(f"key-{i}", timeout=0) for i in range(2000)))
    assert all(d.wait_us == 0 for d in asyncio.run(main()))
    with pytest.raises(RateLimitTimeout):
        limiter.acquire("key-7", timeout=1)


def test_repr_and_exports() -> None:
    limiter = paced_limiter("memory://")
    paced = limiter.paced("k", cost=1, timeout=2)
    assert "key='k'" in repr(paced) and "timeout=2" in repr(paced)
    assert ratewarden.RateLimitTimeout is RateLimitTimeout and isinstance(paced, ratewarden.Paced)


@pytest.mark.parametrize("where", ["memory", "redis"])
def test_the_example_runs(where: str, request: pytest.FixtureRequest) -> None:
    store = [] if where == "memory" else [request.getfixturevalue("redis").url]
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "pacing.py"), *store],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert re.fullmatch(r"20 calls from 10 threads and 10 tasks: the last one (1\.9|2\.\d) s after the first "
                        r"\(one every 100 ms\)", first), first
    assert re.fullmatch(r"gave up: the next slot is \d+ ms away", second), second
