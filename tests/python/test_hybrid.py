"""The hybrid modes of a shared store from Python (?mode=local_first, ?mode=async; docs/hybrid.md), against a real
redis-server: denials answered in-process, exact admission across threads, resets seen from other stores, leases,
stats, bad URLs and asyncio."""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import time
from typing import List

import pytest

import ratewarden
from redis_server import RedisServer

EXACT_ALGORITHMS = ["fixed_window", "sliding_window", "sliding_log", "token_bucket", "gcra"]
# What is known is used only while the reset log was read less than 3 x sync ago: tests that count every local
# answer use a sync long enough that a loaded machine's scheduling never turns local answers off meanwhile.
STEADY = "?mode=local_first&sync=100ms"
_names = itertools.count()


def unique(name: str) -> str:
    return f"{name}:{os.getpid()}:{next(_names)}"


def warm(url: str) -> ratewarden.Store:
    """A hybrid store whose local knowledge is in use: its first call started the background rounds, and the reset
    log has been read once (stats().sync_lag >= 0)."""
    store = ratewarden.Store(url)
    ratewarden.Limiter("1/hour", store, prefix="warm").peek("warm-up")
    deadline = time.monotonic() + 5
    while store.stats().sync_lag < 0:
        assert time.monotonic() < deadline, "the reset log was never read"
        time.sleep(0.001)
    return store


def test_the_docs_example(redis: RedisServer) -> None:
    # docs/hybrid.md shows this as a fragment.
    store = ratewarden.Store(f"{redis.url}?mode=local_first")
    login = ratewarden.Limiter("5/minute", store, prefix=unique("docs"))
    decisions = [login.hit("login:alice") for _ in range(5)]
    assert all(decisions)
    assert store.stats().local_denials == 0  # the store has denied nothing yet
    assert not login.hit("login:alice")  # the store's denial...
    # ...proves the next ones: answered in-process once the reset log has been read (within a sync or so).
    for _ in range(10_000):
        assert not login.hit("login:alice")
        if store.stats().local_denials > 0:
            break
    assert store.stats().local_denials > 0


def test_local_first_answers_the_denials_the_store_proved(redis: RedisServer) -> None:
    store = warm(f"{redis.url}{STEADY}")
    limiter = ratewarden.Limiter("3/minute", store, prefix=unique("proved"))
    assert [bool(limiter.hit("k")) for _ in range(3)] == [True] * 3
    before = store.stats()
    sent = time.monotonic()
    first = limiter.hit("k")  # denied by the store: one round trip, which teaches the denial
    assert not first and first.retry_after > 0
    after_first = store.stats()
    assert after_first.store_calls == before.store_calls + 1
    assert after_first.local_denials == before.local_denials

    local: List[ratewarden.Decision] = [limiter.hit("k") for _ in range(200)]
    local.append(limiter.peek("k"))
    elapsed = time.monotonic() - sent
    stats = store.stats()
    assert stats.local_denials == after_first.local_denials + 201
    assert stats.store_calls == after_first.store_calls  # no round trip for any of them
    assert not any(local)
    for d in local:
        # The store's answer aged by the time since: never earlier than the store implied, never later either.
        assert first.retry_after - elapsed - 0.002 <= d.retry_after <= first.retry_after
        assert (d.limit, d.remaining, d.used) == (first.limit, first.remaining, first.used)
    assert [d.retry_after_us for d in local] == sorted((d.retry_after_us for d in local), reverse=True)


def test_local_first_sends_a_smaller_cost_to_the_store(redis: RedisServer) -> None:
    store = warm(f"{redis.url}{STEADY}")
    limiter = ratewarden.Limiter("10/minute", store, prefix=unique("cost"))
    assert limiter.hit("k", 8).remaining == 2
    assert not limiter.hit("k", 5)  # the store: a cost of 5 or more is denied
    calls = store.stats().store_calls
    assert not limiter.hit("k", 5) and not limiter.hit("k", 9)
    assert store.stats().store_calls == calls  # both proved by the denial
    assert limiter.hit("k", 1).remaining == 1  # a smaller cost might be admitted: asked, and it is
    assert store.stats().store_calls == calls + 1


@pytest.mark.parametrize("algorithm", EXACT_ALGORITHMS)
def test_local_first_admits_exactly_the_limit_across_threads(redis: RedisServer, algorithm: str) -> None:
    store = warm(f"{redis.url}?mode=local_first")
    limiter = ratewarden.Limiter("100/day", store, algorithm=algorithm, prefix=unique("threads"))
    allowed = [0] * 8
    start = threading.Barrier(8)

    def run(i: int) -> None:
        start.wait()
        allowed[i] = sum(1 for _ in range(100) if limiter.hit("shared").allowed)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = store.stats()
    assert sum(allowed) == 100, allowed
    assert stats.local_denials > 0
    # Every admission was the store's, and so was at least one denial; the rest were local.
    assert stats.store_calls + stats.local_denials >= 800


def test_a_reset_from_an_exact_store_is_seen_promptly(redis: RedisServer) -> None:
    store = warm(f"{redis.url}?mode=local_first&sync=10ms")
    prefix = unique("reset")
    limiter = ratewarden.Limiter("2/hour", store, prefix=prefix)
    exact = ratewarden.Limiter("2/hour", ratewarden.Store(redis.url), prefix=prefix)  # another store, mode=exact
    for _ in range(3):
        limiter.hit("k")
    denials = store.stats().local_denials
    assert not limiter.peek("k") and store.stats().local_denials == denials + 1  # known to be denied
    dropped = store.stats().invalidations

    exact.reset("k")
    reset_at = time.monotonic()
    while not limiter.peek("k"):
        assert time.monotonic() - reset_at < 1.0, "the reset was not seen within a second"
        time.sleep(0.0005)
    seen_after = time.monotonic() - reset_at
    # Within sync (10 ms) plus a round trip by design; 3 x sync + scheduling noise of a loaded machine here.
    assert seen_after < 0.25, f"the reset was seen after {seen_after * 1000:.1f} ms"
    assert store.stats().invalidations > dropped
    assert limiter.hit("k").remaining == 1


def test_its_own_reset_is_seen_at_once(redis: RedisServer) -> None:
    store = warm(f"{redis.url}?mode=local_first&sync=1s")  # the log is not read again during the test
    limiter = ratewarden.Limiter("1/hour", store, prefix=unique("own-reset"))
    limiter.hit("k")
    assert not limiter.hit("k") and not limiter.hit("k")
    limiter.reset("k")
    assert limiter.hit("k")


def test_async_leases_admit_locally(redis: RedisServer) -> None:
    store = warm(f"{redis.url}?mode=async&sync=50ms")
    limiter = ratewarden.Limiter("100000000/hour", store, prefix=unique("lease"))
    allowed = 0
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        allowed += sum(1 for _ in range(100) if limiter.hit("hot"))
    stats = store.stats()
    assert allowed > 0
    assert stats.local_allows > allowed * 9 // 10, stats
    assert stats.sync_batches > 0
    # Everything admitted locally was charged to the store first: the store counts at least as much.
    exact = ratewarden.Limiter("100000000/hour", ratewarden.Store(redis.url), prefix=limiter.prefix)
    assert exact.peek("hot").used >= allowed


def test_async_never_admits_more_than_a_fixed_window_across_threads(redis: RedisServer) -> None:
    store = warm(f"{redis.url}?mode=async&sync=20ms")
    limiter = ratewarden.Limiter("2000/day", store, prefix=unique("async-threads"))
    allowed = [0] * 4

    def run(i: int) -> None:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            allowed[i] += sum(1 for _ in range(50) if limiter.hit("shared"))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c = 20  # a lease: 1% of 2000
    assert 2000 - 2 * c <= sum(allowed) <= 2000, allowed  # docs/hybrid.md: over 0, under at most P x 2c (P = 1)
    assert store.stats().local_allows > 0  # the leases were used (sync=20ms: many rounds before the 2000 go)


def test_async_leases_do_not_pile_up_for_a_steady_user(redis: RedisServer) -> None:
    # docs/hybrid.md: a process holds less than 2c of lease at any time. A key used at a steady pace (1 hit a ms,
    # 10 a round) must not charge the store for more than it admits plus that.
    store = warm(f"{redis.url}?mode=async&sync=10ms")
    limiter = ratewarden.Limiter("10000/hour", store, prefix=unique("steady"))
    exact = ratewarden.Limiter("10000/hour", ratewarden.Store(redis.url), prefix=limiter.prefix)
    c = 100  # 1% of 10000
    admitted = 0
    start = time.monotonic()
    for i in range(1000):
        while time.monotonic() < start + i / 1000:
            time.sleep(0.0002)
        admitted += bool(limiter.hit("steady"))
        if i % 250 == 249:
            charged = exact.peek("steady").used
            assert admitted <= charged < admitted + 2 * c, (i, admitted, charged)
    assert admitted == 1000 and store.stats().local_allows > 0


def test_stats_fields_and_types(redis: RedisServer) -> None:
    fields = ["keys", "max_keys", "evictions", "local_denials", "local_allows", "store_calls", "sync_batches",
              "invalidations"]
    fresh = ratewarden.Store(f"{redis.url}?mode=local_first&local_keys=500")
    s = fresh.stats()
    # -1.0 until the reset log has been read once (the first read may already be under way: stats() starts it)
    assert type(s.sync_lag) is float and (s.sync_lag == -1.0 or s.sync_lag >= 0)
    assert all(type(getattr(s, f)) is int for f in fields)
    assert (s.max_keys, s.local_denials, s.store_calls) == (500, 0, 0)

    store = warm(f"{redis.url}?mode=local_first&sync=10ms")
    s = store.stats()
    assert type(s.sync_lag) is float and 0.0 <= s.sync_lag < 1.0
    assert all(type(getattr(s, f)) is int and getattr(s, f) >= 0 for f in fields)
    assert s.sync_batches >= 1 and s.store_calls >= 1
    time.sleep(0.1)
    later = store.stats()
    assert later.sync_batches > s.sync_batches  # the rounds go on in the background
    assert later.sync_lag < 0.5  # ...and read the log every sync (10 ms; a loaded machine may lag)
    for name in ("local_denials", "local_allows", "store_calls", "sync_batches", "sync_lag", "invalidations"):
        assert name in repr(later) or name == "sync_lag"

    # Other stores report zeros for the hybrid counters, and the lag of a log never read, as a fresh hybrid mode.
    for other in (ratewarden.Store("memory://"), ratewarden.Store(redis.url)):
        o = other.stats()
        assert (o.local_denials, o.local_allows, o.store_calls, o.sync_batches, o.invalidations) == (0, 0, 0, 0, 0)
        assert o.sync_lag == -1.0


def test_local_knowledge_is_bounded(redis: RedisServer) -> None:
    store = warm(f"{redis.url}{STEADY}&local_keys=64")
    limiter = ratewarden.Limiter("1/hour", store, prefix=unique("bound"))
    keys = [f"k{i}" for i in range(1000)]
    for d in limiter.hit_many(keys):
        assert d
    for key in keys:  # a flood of distinct denied keys: each denial is remembered, within the bound
        assert not limiter.hit(key)
    s = store.stats()
    assert 0 < s.keys <= 64 and s.max_keys == 64
    assert s.evictions > 0
    assert not limiter.hit(keys[-1])  # what is still known is still right


@pytest.mark.parametrize(
    "query, message",
    [
        ("?mode=fast", 'mode must be exact, local_first or async, got "fast"'),
        ("?mode=", "mode must be exact, local_first or async"),
        ("?mode=local_first&lease=1", "lease= applies to ?mode=async"),
        ("?mode=async&lease=0", "lease must be a percentage in (0, 100]"),
        ("?mode=async&lease=101", "lease must be a percentage in (0, 100]"),
        ("?mode=async&lease=abc", "lease must be a percentage in (0, 100]"),
        ("?mode=async&sync=0ms", "sync"),
        ("?mode=local_first&sync=soon", "sync"),
        ("?mode=local_first&local_keys=0", "local_keys"),
        ("?sync=10ms", "sync= applies to ?mode=local_first or ?mode=async"),
        ("?lease=1", "lease= applies to ?mode=local_first or ?mode=async"),
    ],
)
def test_bad_mode_urls_raise_value_errors(redis: RedisServer, query: str, message: str) -> None:
    url = f"redis://user:s3cret@127.0.0.1:{redis.port}{query}"
    with pytest.raises(ValueError) as caught:
        ratewarden.Store(url)
    assert isinstance(caught.value, ratewarden.InvalidArgumentError)
    assert caught.value.code == "invalid_argument"
    assert message in str(caught.value), str(caught.value)
    assert "s3cret" not in str(caught.value)  # the password is masked
    with pytest.raises(ratewarden.InvalidArgumentError):
        ratewarden.Limiter("1/minute", url)


def test_the_memory_store_takes_no_mode() -> None:
    for mode in ("local_first", "async"):
        with pytest.raises(ratewarden.InvalidArgumentError, match="memory://"):
            ratewarden.Store(f"memory://?mode={mode}")
    assert ratewarden.Store("memory://?mode=exact").in_process


def test_apeek_and_ahit_answer_local_denials_through_asyncio(redis: RedisServer) -> None:
    store = warm(f"{redis.url}{STEADY}")
    limiter = ratewarden.Limiter("5/minute", store, prefix=unique("asyncio"))

    async def main() -> None:
        assert all(await asyncio.gather(*(limiter.ahit("k") for _ in range(5))))
        assert not await limiter.ahit("k")  # the store's denial
        before = store.stats()
        ticks = 0
        stop = False

        async def ticker() -> None:
            nonlocal ticks
            while not stop:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        hits = await asyncio.gather(*(limiter.ahit("k") for _ in range(300)))
        peeks = await asyncio.gather(*(limiter.apeek("k") for _ in range(100)))
        stop = True
        await task
        after = store.stats()
        assert not any(hits) and not any(peeks)
        assert all(d.retry_after > 0 and d.limit == 5 for d in hits + peeks)
        assert after.local_denials - before.local_denials == 400
        assert after.store_calls == before.store_calls
        assert ticks > 0
        await limiter.areset("k")  # its own reset: forgotten at once
        assert await limiter.ahit("k")

    asyncio.run(main())


def test_local_first_when_the_store_dies_and_comes_back(own_redis: RedisServer) -> None:
    url = f"{own_redis.url}?mode=local_first&sync=10ms&timeout=200ms&connect_timeout=200ms"
    store = warm(url)
    prefix = unique("dies")
    raising = ratewarden.Limiter("1/hour", store, prefix=prefix)
    fail_open = ratewarden.Limiter("1/hour", store, prefix=prefix, on_store_error="allow")
    fail_closed = ratewarden.Limiter("1/hour", store, prefix=prefix, on_store_error="deny")
    raising.hit("k")
    assert not raising.hit("k")
    denials = store.stats().local_denials
    assert not raising.hit("k") and store.stats().local_denials == denials + 1

    own_redis.kill()
    # Local answers stop once the reset log has gone unread too long (docs/hybrid.md): then every call goes to the
    # store, where on_store_error applies — never a hang, never a crash, never a stale local answer for ever.
    deadline = time.monotonic() + 5
    while True:
        started = time.monotonic()
        try:
            raising.hit("k")
        except ratewarden.StoreError as error:
            assert error.code in ("store_unavailable", "store_timeout", "store_error")
            break
        finally:
            assert time.monotonic() - started < 2, "a call hung on a dead store"
        assert time.monotonic() < deadline, "local answers went on with the store dead"
        time.sleep(0.01)
    assert store.stats().sync_lag > 0.01
    assert fail_open.hit("k").allowed  # what must go to the store: on_store_error
    assert not fail_closed.hit("k").allowed
    with pytest.raises(ratewarden.StoreError):
        raising.hit("never-seen")

    own_redis.start()  # same port, empty (no persistence): k's state is gone, and `exact` would admit it
    deadline = time.monotonic() + 10
    while True:
        try:
            if raising.hit("k"):
                break
        except ratewarden.StoreError:
            pass
        assert time.monotonic() < deadline, "the store never came back, or k is still denied from what it forgot"
        time.sleep(0.05)
    assert not raising.hit("k")  # exact semantics again: the store's state, its denial...
    deadline = time.monotonic() + 5
    before = store.stats().local_denials
    while store.stats().local_denials == before:  # ...and local denials once the reset log is read again
        assert not raising.hit("k")
        assert time.monotonic() < deadline, "local answers never resumed"
        time.sleep(0.001)


def test_local_first_forgets_what_a_flushed_store_lost(own_redis: RedisServer) -> None:
    store = warm(f"{own_redis.url}?mode=local_first&sync=10ms")
    limiter = ratewarden.Limiter("1/hour", store, prefix=unique("flushed"))
    limiter.hit("k")
    assert not limiter.hit("k") and not limiter.hit("k")  # known: denied for an hour
    # The key's state is gone, and the reset log with it (which had no entry yet): `exact` admits the next hit at
    # once; local_first must see the loss as a gap in the log and forget what it knew.
    assert own_redis.cli("FLUSHALL") == "OK"
    deadline = time.monotonic() + 1  # 100 syncs
    while not limiter.hit("k"):
        assert time.monotonic() < deadline, "still denied from what the store no longer holds"
        time.sleep(0.01)


def _tasks_and_fds() -> "tuple[int, int]":
    return len(os.listdir("/proc/self/task")), len(os.listdir("/proc/self/fd"))


def test_stores_dropped_mid_flight_leave_nothing_behind(redis: RedisServer) -> None:
    import gc

    def churn(n: int) -> None:
        for i in range(n):
            mode = ("local_first", "async")[i % 2]

            async def flood() -> None:
                store = ratewarden.Store(f"{redis.url}?mode={mode}&sync=1ms")
                limiter = ratewarden.Limiter("5/hour", store, prefix=unique("churn"))
                calls = [asyncio.ensure_future(limiter.ahit(f"k{j % 3}")) for j in range(100)]
                await asyncio.sleep(0)
                del limiter, store  # dropped with calls in flight and background rounds (every 1 ms) scheduled
                gc.collect()
                decisions = await asyncio.gather(*calls)
                allowed = sum(1 for d in decisions if d)
                # 5 per key, 3 keys: exactly in local_first; in async, less at most 2c per key (c = 1 here): a lease
                # charged with a call to the store and never spent (docs/hybrid.md).
                assert allowed == 15 if mode == "local_first" else 15 - 3 * 2 <= allowed <= 15, (mode, allowed)

            asyncio.run(flood())
            gc.collect()

    churn(10)  # the I/O threads and pools of the first stores exist from here on
    time.sleep(0.2)
    before = _tasks_and_fds()
    churn(60)
    time.sleep(0.5)
    tasks, fds = _tasks_and_fds()
    assert tasks <= before[0] + 2 and fds <= before[1] + 4, (before, (tasks, fds))


def test_a_forked_child_does_not_trust_its_parents_knowledge(redis: RedisServer) -> None:
    store = warm(f"{redis.url}{STEADY}")
    limiter = ratewarden.Limiter("1/hour", store, prefix=unique("fork"))
    limiter.hit("k")
    assert not limiter.hit("k") and not limiter.hit("k")
    assert store.stats().local_denials >= 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            first = limiter.hit("k")  # the child reads the log before it answers locally: the store answers
            s = store.stats()
            deadline = time.monotonic() + 5
            while store.stats().sync_lag < 0 and time.monotonic() < deadline:
                time.sleep(0.001)
            limiter.hit("k")
            again = limiter.hit("k")
            t = store.stats()
            ok = (not first and s.local_denials == 0 and s.store_calls == 1 and not again and t.local_denials >= 1)
            os.write(write, f"{int(ok)} {s} {t}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    report = os.read(read, 4096).decode()
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and report.startswith("1 "), report
    assert not limiter.hit("k")  # the parent's knowledge is intact
