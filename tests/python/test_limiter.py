"""The Python API: decisions, operations, keys, stores and failures."""

from __future__ import annotations

import pickle
import time

import pytest

import ratewarden
from ratewarden import _native
from redis_server import RedisServer


def test_decision_fields_repr_and_truth(store_url: str) -> None:
    limiter = ratewarden.Limiter("2/minute", store_url, prefix="decision")
    limiter.reset("alice")
    first = limiter.hit("alice")
    assert first and first.allowed
    assert (first.limit, first.remaining, first.used, first.retry_after) == (2, 1, 1, 0.0)
    assert 59.0 < first.reset_after <= 60.0
    assert first.reset_after == first.reset_after_us / 1e6
    limiter.hit("alice")
    refused = limiter.hit("alice")
    assert not refused
    assert refused.retry_after == refused.retry_after_us / 1e6 > 0
    assert repr(refused).startswith("Decision(allowed=False, limit=2, remaining=0, reset_after=")
    assert refused.used == 2


def test_decision_equality_and_construction() -> None:
    a = ratewarden.Decision(allowed=True, limit=5, remaining=4, reset_after_us=60_000_000, retry_after_us=0, used=1)
    b = ratewarden.Decision(allowed=True, limit=5, remaining=4, reset_after_us=60_000_000, retry_after_us=0, used=1)
    assert a == b and hash(a) == hash(b) and a != "a"
    assert a.policy_index == 0  # optional in the constructor
    assert repr(a) == (
        "Decision(allowed=True, limit=5, remaining=4, reset_after=60.0, retry_after=0.0, used=1, policy_index=0)"
    )
    # Every field counts, policy_index too: the same numbers from another policy are another answer.
    c = ratewarden.Decision(
        allowed=True, limit=5, remaining=4, reset_after_us=60_000_000, retry_after_us=0, used=1, policy_index=1
    )
    assert c != a and c.policy_index == 1 and repr(c).endswith("policy_index=1)")
    # A reservation's shows its wait first and its ticket last, beside every other field.
    r = ratewarden.Decision(
        allowed=True, limit=5, remaining=4, reset_after_us=200_000, retry_after_us=0, used=1, wait_us=500_000, ticket=7
    )
    assert repr(r) == (
        "Decision(allowed=True, wait=0.5, limit=5, remaining=4, reset_after=0.2, retry_after=0.0, used=1, "
        "policy_index=0, ticket=7)"
    )


def test_a_message_keeps_what_follows_a_nul() -> None:
    # The core writes a NUL of the input it quotes as \0: a C string's message would end there.
    with pytest.raises(ratewarden.InvalidArgumentError, match=r'"5/min\\0ute"'):
        ratewarden.Limiter("5/min\0ute")
    with pytest.raises(ratewarden.InvalidArgumentError, match=r'unknown algorithm "gc\\0ra"'):
        ratewarden.Limiter("5/minute", algorithm="gc\0ra")


def test_decision_names_the_policy_it_reports(store_url: str) -> None:
    clock = ratewarden.TestClock(1_702_080_000_000_000)
    limiter = ratewarden.Limiter(
        "10/second; 10 per 2 seconds", ratewarden.Store(store_url, test_clock=clock), prefix="policy-index"
    )
    limiter.reset("k")
    assert [limiter.hit("k").policy_index for _ in range(5)] == [0] * 5  # a tie: the first policy
    clock.now_us += 1_500_000  # the 1-second window restarted (9 left), the 2-second one has 4 left
    d = limiter.hit("k")
    assert (d.allowed, d.limit, d.remaining, d.policy_index) == (True, 10, 4, 1)
    assert [x.policy_index for x in limiter.hit_many(["k", "other"])] == [1, 0]


def test_peek_reset_and_cost(store_url: str) -> None:
    limiter = ratewarden.Limiter("10/minute", store_url, prefix="peek")
    limiter.reset("k")
    assert limiter.hit("k", cost=4).remaining == 6
    assert limiter.peek("k", 7).allowed is False
    assert limiter.peek("k").remaining == 6  # peek consumes nothing
    assert limiter.hit("k", 7).allowed is False  # a denied hit consumes nothing
    assert limiter.hit("k", 6).remaining == 0
    limiter.reset("k")
    assert limiter.peek("k").remaining == 10


def test_str_and_bytes_keys_are_the_same_bytes(store_url: str) -> None:
    limiter = ratewarden.Limiter("3/minute", store_url, prefix="keys")
    for key in ("é", b"\x00bin\xff"):
        limiter.reset(key)
    limiter.hit("é")
    assert limiter.hit("é".encode()).remaining == 1
    assert limiter.hit(b"\x00bin\xff").remaining == 2  # binary, NUL included
    assert limiter.storage_key("é") == b"keys:{\xc3\xa9}:v3:fixed_window:3:60000"


def test_wrong_arguments_are_named_in_one_line() -> None:
    # Not pybind11's list of overloads: what was wrong, and what was given.
    with pytest.raises(TypeError, match=r"^store must be a store URL \(a str\) or a ratewarden.Store, got 5$"):
        ratewarden.Limiter("5/minute", 5)  # type: ignore[arg-type]
    for index in (-1, 1):
        with pytest.raises(IndexError, match=rf"^policy index out of range: {index}, not 0 to 0$"):
            ratewarden.Limiter("5/minute").storage_key("k", index)


def test_adversarial_keys_keep_their_own_storage_keys_and_limits(store_url: str) -> None:
    # docs/key-format.md: braces, colons, spaces, NUL, backslashes, invalid UTF-8, 4,096 bytes; a key holding '}' is
    # written escaped under v3e, so its cluster hash tag is the whole key (tests/core/key_format_test.cpp: all stores).
    alphabet = [b"a", b"{", b"}", b":", b" ", b"\x00", b"\\", b")", b"\xff"]
    keys = [a + b for a in alphabet for b in alphabet] + [b"}" * 4096, b"\\" * 4096, b"a}" * 2048]
    limiter = ratewarden.Limiter("1/minute; 5/hour", store_url, prefix="adversarial")
    for k in keys:
        limiter.reset(k)
    assert len({limiter.storage_key(k, i) for k in keys for i in (0, 1)}) == 2 * len(keys)
    assert limiter.storage_key(b"a}b\\") == b"adversarial:{a\\)b\\\\}:v3e:fixed_window:1:60000"
    assert all(limiter.hit_many(keys)) and not any(limiter.hit_many(keys))


def test_hit_many(store_url: str) -> None:
    limiter = ratewarden.Limiter("1/minute", store_url, prefix="many")
    keys = [f"user{i}" for i in range(50)]
    for k in keys:
        limiter.reset(k)
    decisions = limiter.hit_many(keys + keys[:1])
    assert [d.allowed for d in decisions] == [True] * 50 + [False]
    limiter.reset(b"gen")
    assert [d.allowed for d in limiter.hit_many(k for k in [b"gen", b"gen"])] == [True, False]  # any iterable
    assert limiter.hit_many([]) == []


def test_allow_fast_path() -> None:
    limiter = ratewarden.Limiter("2/second", prefix="allow")
    assert [limiter.allow("x") for _ in range(3)] == [True, True, False]


def test_multi_policy_and_options() -> None:
    limiter = ratewarden.Limiter("2/second; 5/minute", algorithm="sliding_log", prefix="multi")
    assert [str(p) for p in limiter.policies] == ["2/1s", "5/60s"]
    assert (limiter.algorithm, limiter.prefix, limiter.max_cost, limiter.on_store_error) == (
        "sliding_log", "multi", 2, "raise")
    gcra = ratewarden.Limiter("10/second", algorithm="gcra", burst=20)
    assert gcra.policies[0].capacity == 20 and gcra.max_cost == 20
    assert "gcra" in repr(gcra)


def test_every_algorithm_of_the_core_is_accepted() -> None:
    for name in _native.algorithms():  # the core's table of algorithms
        assert ratewarden.Limiter("1/s", "memory://", algorithm=name).algorithm == name


def test_store_sharing_by_url(redis: RedisServer) -> None:
    # A memory:// URL opens a store of the limiter's own; one Store given to several limiters is shared.
    a = ratewarden.Limiter("1/minute", "memory://?max_keys=1000")
    b = ratewarden.Limiter("1/minute", "memory://?max_keys=1000")
    assert a.store is not b.store
    assert a.hit("k") and b.hit("k")
    store = ratewarden.Store("memory://")
    c, d = ratewarden.Limiter("1/minute", store), ratewarden.Limiter("1/minute", store)
    assert c.store is store and c.hit("k") and not d.hit("k")
    # A network URL names a server: limiters on the same URL string get one Store (one connection pool).
    e = ratewarden.Limiter("1/minute", redis.url, prefix="by-url")
    f = ratewarden.Limiter("1/minute", redis.url, prefix="by-url")
    assert e.store is f.store is ratewarden.open_store(redis.url)
    e.reset("k")
    assert e.hit("k") and not f.hit("k")


def test_store_stats_count_states_and_evictions() -> None:
    store = ratewarden.Store("memory://?max_keys=100")
    limiter = ratewarden.Limiter("1/hour", store)
    empty = store.stats()
    assert (empty.keys, empty.max_keys, empty.evictions) == (0, 100, 0)
    for i in range(1000):  # every one of them live for an hour
        assert limiter.hit(f"user{i}")
    stats = limiter.store.stats()
    assert stats.max_keys == 100 and 0 < stats.keys <= 100
    assert stats.keys + stats.evictions == 1000  # each state is held or was evicted, and counted
    assert repr(stats) == (
        f"StoreStats(name='memory://?max_keys=100&shards=1', keys={stats.keys}, max_keys=100, "
        f"evictions={stats.evictions}, expired_drops=0, local_denials=0, local_allows=0, store_calls=0, "
        "sync_batches=0, invalidations=0, calls={'ok': 0, 'timeout': 0, 'unavailable': 0, 'error': 0}, "
        "circuits_open=0, circuit_openings=0, connections_open=0)"
    )
    assert stats == store.stats() and hash(stats) == hash(store.stats()) and stats != empty
    assert isinstance(stats, ratewarden.StoreStats)
    # One state per key and policy.
    two = ratewarden.Store("memory://?max_keys=100")
    ratewarden.Limiter("1/hour; 2/day", two).hit("k")
    assert (two.stats().keys, two.stats().evictions) == (2, 0)


def test_redis_store_stats_are_zeros(redis: RedisServer) -> None:
    store = ratewarden.Store(redis.url)
    ratewarden.Limiter("5/minute", store, prefix="stats").hit("k")
    stats = store.stats()  # the keys are on the server: nothing to count here, and no round trip
    assert (stats.keys, stats.max_keys, stats.evictions) == (0, 0, 0)


def test_two_processes_share_a_redis_limit(redis: RedisServer) -> None:
    import subprocess
    import sys

    code = (
        "import ratewarden, sys;"
        f"l = ratewarden.Limiter('5/minute', '{redis.url}', prefix='procs');"
        "print(sum(l.hit('k').allowed for _ in range(4)))"
    )
    ratewarden.Limiter("5/minute", redis.url, prefix="procs").reset("k")
    counts = [int(subprocess.check_output([sys.executable, "-c", code], text=True)) for _ in range(2)]
    assert sorted(counts) == [1, 4]


def test_store_errors_and_on_store_error(own_redis: RedisServer) -> None:
    url = own_redis.url + "?timeout=200ms&connect_timeout=200ms"
    raising = ratewarden.Limiter("5/minute", url)
    fail_open = ratewarden.Limiter("5/minute", url, on_store_error="allow")
    fail_closed = ratewarden.Limiter("5/minute", url, on_store_error="deny")
    assert raising.hit("k").allowed
    own_redis.kill()
    with pytest.raises(ratewarden.StoreError) as info:
        raising.hit("k")
    assert isinstance(info.value, ratewarden.Error) and not isinstance(info.value, ValueError)
    assert info.value.code in ("store_unavailable", "store_timeout", "store_error")
    assert fail_open.hit("k").allowed
    closed = fail_closed.hit("k")
    assert not closed.allowed and closed.retry_after == 1.0
    own_redis.start()  # same port: the store reconnects by itself
    assert _recovers(raising)


def _recovers(limiter: ratewarden.Limiter) -> bool:
    # The failures opened the store's circuit: calls fail at once until the back-off (1 s by default) lets a probe
    # through, and the probe's answer closes it.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            return limiter.hit("after-restart").allowed
        except ratewarden.StoreError:
            time.sleep(0.05)
    return False


def test_errors_pickle_and_keep_their_code() -> None:
    error = ratewarden.StoreError("down", "store_timeout")
    assert pickle.loads(pickle.dumps(error)).code == "store_timeout"


def test_installed_package_is_tested() -> None:
    # The suite must exercise the installed wheel, not the source tree.
    assert "site-packages" in ratewarden.__file__
    assert ratewarden.__version__.count(".") == 2
