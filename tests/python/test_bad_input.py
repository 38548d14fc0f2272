"""Bad input from Python gets the documented exception: TypeError for a wrong type, InvalidArgumentError (a
ValueError and a ratewarden.Error) for a bad value. Never a crash."""

from __future__ import annotations

from typing import Any, Dict

import pytest

import ratewarden

LIMITER = ratewarden.Limiter("5/minute", prefix="bad")


@pytest.mark.parametrize(
    "policy",
    ["", "5", "5/fortnight", "0/minute", "-1/minute", "5/0s", "abc", "1/minute;;", "99999999999/minute",
     "1/99999999h", "5/minute; 5/minute", "5/minute\x00", "💥/minute", "1" * 5000 + "/minute"],
)
def test_bad_policy_strings(policy: str) -> None:
    with pytest.raises(ratewarden.InvalidArgumentError) as info:
        ratewarden.Limiter(policy)
    assert isinstance(info.value, ValueError) and info.value.code == "invalid_argument"


@pytest.mark.parametrize(
    "options",
    [{"algorithm": "leaky"}, {"burst": 0}, {"burst": -3}, {"burst": 10**30}, {"buckets": 0}, {"buckets": 2**40},
     {"algorithm": "sliding_window", "buckets": 100_000}, {"prefix": ""}, {"prefix": "a{b"},
     {"on_store_error": "ignore"}],
)
def test_bad_options(options: Dict[str, Any]) -> None:
    with pytest.raises(ratewarden.InvalidArgumentError):
        ratewarden.Limiter("5/minute", algorithm=options.pop("algorithm", "gcra"), **options)


@pytest.mark.parametrize(
    "args",
    [(5,), ("5/minute", 42), ("5/minute", None), (b"5/minute",)],
)
def test_wrong_constructor_types(args: Any) -> None:
    with pytest.raises(TypeError):
        ratewarden.Limiter(*args)


@pytest.mark.parametrize("store", ["", "memory", "memory://?max_keys=0", "redis://:99999", "ftp://x", "redis://h:p"])
def test_bad_store_urls(store: str) -> None:
    with pytest.raises(ratewarden.InvalidArgumentError):
        ratewarden.Store(store)


def test_bad_test_clocks() -> None:
    with pytest.raises(TypeError, match="test_clock must be a TestClock"):
        ratewarden.Store("memory://", test_clock=1_000_000)
    with pytest.raises(TypeError):
        ratewarden.TestClock(1.5)  # microseconds are integers


@pytest.mark.parametrize("cost", [0, -1, 6, 2**63, -(2**63) - 1, 10**100])
def test_bad_costs(cost: int) -> None:
    for call in (LIMITER.hit, LIMITER.peek, LIMITER.allow):
        with pytest.raises(ratewarden.InvalidArgumentError):
            call("k", cost)
    with pytest.raises(ratewarden.InvalidArgumentError):
        LIMITER.hit_many(["k"], cost)


@pytest.mark.parametrize("cost", [1.0, "1", None, True, [1]])
def test_wrong_cost_types(cost: Any) -> None:
    with pytest.raises(TypeError):
        LIMITER.hit("k", cost)


@pytest.mark.parametrize("key", ["", b"", "x" * 4097, b"x" * 4097, "\udc80"])
def test_bad_keys(key: Any) -> None:
    for call in (LIMITER.hit, LIMITER.peek, LIMITER.reset, LIMITER.allow):
        with pytest.raises(ratewarden.InvalidArgumentError):
            call(key)
    with pytest.raises(ratewarden.InvalidArgumentError):
        LIMITER.hit_many(["ok", key])


@pytest.mark.parametrize("key", [None, 1, 1.5, bytearray(b"k"), memoryview(b"k"), ["k"], object()])
def test_wrong_key_types(key: Any) -> None:
    for call in (LIMITER.hit, LIMITER.peek, LIMITER.reset, LIMITER.allow):
        with pytest.raises(TypeError):
            call(key)
    with pytest.raises(TypeError):
        LIMITER.hit_many([key])


def test_hit_many_wants_a_sequence_of_keys() -> None:
    for keys in ("abc", b"abc", 5, None):
        with pytest.raises(TypeError):
            LIMITER.hit_many(keys)  # type: ignore[arg-type]


def test_limits_at_the_edges_still_work() -> None:
    assert LIMITER.hit("x" * 4096).allowed
    assert LIMITER.hit("k", 5).allowed
    assert ratewarden.Limiter("1000000000/1ms").hit("k", 1_000_000_000).allowed
