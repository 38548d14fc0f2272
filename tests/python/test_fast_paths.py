"""The hot calls — hit, allow and peek — go through the CPython API directly (python/native/fast_calls.cpp), and a
Decision is a small C type (decision.cpp). These tests hold that path to the API's contract: its arguments and errors,
the Decision's behaviour, and — against the Redis store's Lua scripts — every decision of seeded random traffic and
the exactness of retry_after to the microsecond. (The conformance vectors run through hit, allow and peek too:
test_conformance.py; the GIL release on Redis: test_threads.py.)"""

from __future__ import annotations

import inspect
import itertools
import os
import random
import uuid
from typing import Any, Dict, List, Tuple

import pytest

import ratewarden
from ratewarden import _native
from redis_server import RedisServer

HOT_CALLS = ("hit", "allow", "peek")
ALGORITHMS = _native.algorithms()
OPTION = {"token_bucket": "burst", "gcra": "burst", "sliding_window": "buckets"}  # the option each one takes
BASE_US = 1_702_080_000_000_000
_runs = itertools.count()


def unique_prefix(name: str) -> str:
    """A prefix no other test or run uses: the session's Redis server is shared."""
    return f"{name}-{uuid.uuid4().hex[:8]}-{next(_runs)}"


def test_hot_calls_are_c_methods() -> None:
    for name in HOT_CALLS:
        method = _native.Limiter.__dict__[name]
        assert type(method) is type(dict.get), name  # a method descriptor of the type, not a pybind11 function
        assert str(inspect.signature(method)) == "(self, /, key, cost=1)"
    limiter = ratewarden.Limiter("10/minute", prefix="fast-args")
    assert str(inspect.signature(limiter.hit)) == "(key, cost=1)"


def test_key_and_cost_by_position_or_name() -> None:
    limiter = ratewarden.Limiter("10/minute", ratewarden.Store("memory://", test_clock=ratewarden.TestClock(BASE_US)))
    assert limiter.hit("k").remaining == 9
    assert limiter.hit("k", 2).remaining == 7
    assert limiter.hit(key="k", cost=3).remaining == 4
    assert limiter.allow(cost=4, key=b"k") is True
    assert limiter.peek("k", cost=1) == limiter.peek(key="k")
    assert limiter.allow("k") is False


@pytest.mark.parametrize("name", HOT_CALLS)
@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((), {}, "missing required argument 'key'"),
        ((), {"cost": 1}, "missing required argument 'key'"),
        (("k", 1, 2), {}, r"takes at most 2 arguments \(3 given\)"),
        (("k",), {"costs": 1}, "got an unexpected keyword argument 'costs'"),
        (("k",), {"key": "j"}, "got multiple values for argument 'key'"),
        (("k", 1), {"cost": 1}, "got multiple values for argument 'cost'"),
    ],
)
def test_wrong_arguments(name: str, args: Tuple[Any, ...], kwargs: Dict[str, Any], message: str) -> None:
    limiter = ratewarden.Limiter("10/minute", prefix="fast-args")
    with pytest.raises(TypeError, match=rf"^{name}\(\) {message}$"):
        getattr(limiter, name)(*args, **kwargs)


def test_errors_keep_their_types_and_messages() -> None:
    limiter = ratewarden.Limiter("5/minute", prefix="fast-errors")
    for name in HOT_CALLS:
        call = getattr(limiter, name)
        with pytest.raises(TypeError, match="^key must be str or bytes, not int$"):
            call(1)
        with pytest.raises(TypeError, match="^cost must be an int, not float$"):
            call("k", 1.0)
        with pytest.raises(ratewarden.InvalidArgumentError, match="key is empty") as empty:
            call("")
        assert empty.value.code == "invalid_argument"
        with pytest.raises(ratewarden.InvalidArgumentError, match=r"cost must be between 1 and 5 .*got 6"):
            call("k", 6)
        with pytest.raises(ratewarden.InvalidArgumentError, match="does not fit in 64 bits"):
            call("k", 2**64)


def test_only_limiters_get_an_answer() -> None:
    with pytest.raises(TypeError):
        _native.Limiter.hit("not a limiter", "k")  # type: ignore[arg-type]
    blank = ratewarden.Limiter.__new__(ratewarden.Limiter)  # __init__ never ran: no C++ Limiter behind it
    for name in HOT_CALLS:
        with pytest.raises(TypeError, match="not initialized"):
            getattr(blank, name)("k")


def test_store_errors_through_every_hot_call(own_redis: RedisServer) -> None:
    url = own_redis.url + "?timeout=200ms&connect_timeout=200ms"
    limiters = {mode: ratewarden.Limiter("5/minute", url, on_store_error=mode) for mode in ("raise", "allow", "deny")}
    assert all(limiter.allow("k") for limiter in limiters.values())
    own_redis.kill()
    for name in HOT_CALLS:
        with pytest.raises(ratewarden.StoreError) as info:
            getattr(limiters["raise"], name)("k")
        assert info.value.code in ("store_unavailable", "store_timeout", "store_error")
        assert getattr(limiters["allow"], name)("k")  # True, or a truthy Decision
        assert not getattr(limiters["deny"], name)("k")
    assert limiters["allow"].allow("k") is True and limiters["deny"].allow("k") is False


def test_decision_is_a_value() -> None:
    limiter = ratewarden.Limiter("1/minute", prefix=unique_prefix("fast-decision"))
    d = limiter.hit("k")
    assert type(d) is ratewarden.Decision and isinstance(d, ratewarden.Decision)
    assert type(limiter.peek("k")) is type(limiter.hit_many(["k"])[0]) is ratewarden.Decision
    fields = dict(allowed=True, limit=1, remaining=0, reset_after_us=d.reset_after_us, retry_after_us=0, used=1)
    same = ratewarden.Decision(**fields)
    assert same == d and not (same != d) and hash(same) == hash(d) and {d: "x"}[same] == "x"
    assert d != (True, 1, 0) and d != None  # noqa: E711
    with pytest.raises(TypeError):
        d < same  # type: ignore[operator]  # noqa: B015
    with pytest.raises(AttributeError):
        d.allowed = False  # type: ignore[misc]
    with pytest.raises(AttributeError):
        d.note = "x"  # type: ignore[attr-defined]
    assert (d.retry_after, d.reset_after) == (0.0, d.reset_after_us / 1e6)


def test_decision_constructor() -> None:
    fields: Dict[str, Any] = dict(allowed=False, limit=3, remaining=0, reset_after_us=7, retry_after_us=5, used=3)
    d = ratewarden.Decision(**fields, policy_index=2)
    assert (d.allowed, d.limit, d.remaining, d.reset_after_us, d.retry_after_us, d.used, d.policy_index) == (
        False, 3, 0, 7, 5, 3, 2)
    assert repr(d) == (
        "Decision(allowed=False, limit=3, remaining=0, reset_after=7e-06, retry_after=5e-06, used=3, policy_index=2)"
    )
    assert ratewarden.Decision(**fields).policy_index == 0
    with pytest.raises(TypeError):
        ratewarden.Decision(False, 3, 0, 7, 5, 3)  # type: ignore[misc]  # keywords only
    with pytest.raises(TypeError, match="missing required keyword argument: 'used'"):
        ratewarden.Decision(**{k: v for k, v in fields.items() if k != "used"})
    with pytest.raises(TypeError):
        ratewarden.Decision(**fields, extra=1)
    with pytest.raises(TypeError, match="limit must be an int"):
        ratewarden.Decision(**{**fields, "limit": 1.5})
    with pytest.raises(ratewarden.InvalidArgumentError):
        ratewarden.Decision(**fields, policy_index=2**31)


# Differential fuzzing through the hot calls: seeded random traffic on the memory store and on Redis side by side, on
# one TestClock; the C++ algorithms and their Lua twins must decide identically at every step. Fixed seeds plus one
# random one per run; RATEWARDEN_FUZZ_SEED=<seed> replays a failure in place of the random seed.
RATES = ["3/s", "5/500ms", "10/10s", "20/minute", "7/minute", "100/hour", "4/2s", "50/day"]
SEEDS = [1, 2, int(os.environ.get("RATEWARDEN_FUZZ_SEED", random.SystemRandom().randrange(3, 2**32)))]
STEPS = 1200


def fuzz_limiters(rng: random.Random, algorithm: str, stores: List[ratewarden.Store]) -> List[List[ratewarden.Limiter]]:
    prefix = unique_prefix("fuzz-py")
    policies: List[Tuple[str, Dict[str, Any]]] = [(rng.choice(RATES), {})]
    option = OPTION.get(algorithm)
    if option == "burst":
        policies.append((rng.choice(RATES), {"burst": rng.randint(1, 30)}))
    elif option == "buckets":
        policies.append((rng.choice(RATES), {"buckets": rng.choice([1, 3, 7, 64])}))
    policies.append(("; ".join(rng.sample(RATES, rng.choice([2, 3]))), {}))
    return [
        [ratewarden.Limiter(policy, store, algorithm=algorithm, prefix=prefix, **options) for store in stores]
        for policy, options in policies
    ]


def advance(rng: random.Random, clock: ratewarden.TestClock) -> None:
    """Mostly small steps, some across windows, a few of hours or days (the test clock runs ahead of real time, so
    the Redis keys' real TTLs never drop a state it still sees alive)."""
    r = rng.random()
    if r < 0.5:
        return
    if r < 0.8:
        clock.now_us += rng.randint(1, 20_000)
    elif r < 0.92:
        clock.now_us += rng.randint(20_000, 2_000_000)
    elif r < 0.98:
        clock.now_us += rng.randint(2_000_000, 600_000_000)
    else:
        clock.now_us += rng.randint(600_000_000, 3 * 86_400_000_000)


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed{s}")
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_differential_fuzz(redis: RedisServer, algorithm: str, seed: int) -> None:
    rng = random.Random(seed)
    clock = ratewarden.TestClock(BASE_US + rng.randrange(86_400_000_000))
    stores = [ratewarden.Store("memory://", test_clock=clock), ratewarden.Store(redis.url, test_clock=clock)]
    pairs = fuzz_limiters(rng, algorithm, stores)
    for step in range(STEPS):
        advance(rng, clock)
        memory, shared = rng.choice(pairs)
        key = f"k{rng.randrange(4)}"
        cost = 1 if rng.random() < 0.75 else rng.randint(1, memory.max_cost)
        op = rng.random()
        where = f"seed {seed}, step {step} at {clock.now_us}, {[str(p) for p in memory.policies]}, {key}, cost {cost}"
        if op < 0.04:
            memory.reset(key)
            shared.reset(key)
        elif op < 0.08:
            assert memory.hit_many(["k0", "k1", "k2"], cost) == shared.hit_many(["k0", "k1", "k2"], cost), where
        elif op < 0.25:
            assert memory.peek(key, cost) == shared.peek(key, cost), f"peek, {where}"
        elif op < 0.5:
            # allow on one side, hit on the other (alternately): both charge the same; allow answers `allowed`.
            first, second = (memory, shared) if step % 2 else (shared, memory)
            assert first.allow(key, cost) is second.hit(key, cost).allowed, f"allow, {where}"
        else:
            assert memory.hit(key, cost) == shared.hit(key, cost), f"hit, {where}"


# retry_after through the hot calls, on both stores: a denied call made again exactly retry_after later is allowed,
# one microsecond earlier it is still denied; the float seconds are the exact microseconds / 1e6.
@pytest.mark.parametrize("store_kind", ["memory", "redis"])
@pytest.mark.parametrize(
    "algorithm, policy, options",
    [(a, "10/s", {}) for a in ALGORITHMS]
    + [("sliding_window", "17/7s", {"buckets": 1}), ("sliding_window", "100/1s", {"buckets": 7}),
       ("token_bucket", "7/minute", {"burst": 3}), ("gcra", "10/s", {"burst": 25}),
       ("fixed_window", "3/s; 5 per 3 seconds", {}), ("gcra", "5/s; 20/minute", {})],
)
def test_retry_after_is_exact(
    store_kind: str, algorithm: str, policy: str, options: Dict[str, Any], request: pytest.FixtureRequest
) -> None:
    rng = random.Random(42)
    clock = ratewarden.TestClock(BASE_US + 777)
    url = "memory://" if store_kind == "memory" else request.getfixturevalue("redis").url
    limiter = ratewarden.Limiter(
        policy, ratewarden.Store(url, test_clock=clock), algorithm=algorithm, prefix=unique_prefix("retry"), **options
    )
    period_us = min(p.period_us for p in limiter.policies)
    denials = 0
    for _ in range(400):
        clock.now_us += rng.randint(0, period_us // 4)
        cost = rng.randint(1, limiter.max_cost)
        peeked = limiter.peek("k", cost)
        d = limiter.hit("k", cost)
        assert (peeked.allowed, peeked.retry_after_us) == (d.allowed, d.retry_after_us)
        assert d.retry_after == d.retry_after_us / 1e6
        if d:
            assert d.retry_after_us == 0
            continue
        denials += 1
        retry, denied_at = d.retry_after_us, clock.now_us
        assert retry > 0
        clock.now_us = denied_at + retry - 1
        assert not limiter.peek("k", cost) and limiter.allow("k", cost) is False, f"allowed 1 µs before {retry} µs"
        clock.now_us = denied_at + retry
        assert limiter.peek("k", cost), f"still denied {retry} µs later"
    assert denials > 20
