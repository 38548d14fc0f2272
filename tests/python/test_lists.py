"""KeyList (docs/key-lists.md) on the memory store and on Redis: add, contains, remove, expiry, the asyncio forms,
and bad input. Across runtimes: tests/polyglot/test_key_lists.py."""
from __future__ import annotations

import asyncio
import time

import pytest

import ratewarden


@pytest.fixture(params=["memory", "redis"])
def url(request: pytest.FixtureRequest) -> str:
    return "memory://" if request.param == "memory" else request.getfixturevalue("redis").url


def test_add_contains_remove(url: str) -> None:
    store = ratewarden.open_store(url)
    denied = ratewarden.KeyList("denied-py", store)
    assert "10.0.0.1" not in denied
    denied.add("10.0.0.1")
    denied.add(b"\x00\xffbytes")
    assert "10.0.0.1" in denied and denied.contains(b"\x00\xffbytes")
    assert denied.expires_in("10.0.0.1") > 3649 * 86400
    denied.remove("10.0.0.1")
    assert "10.0.0.1" not in denied and denied.expires_in("10.0.0.1") == 0
    # A limiter on the same store and key is not disturbed by the list, nor the list by it.
    limiter = ratewarden.Limiter("1/hour", store)
    assert limiter.hit("10.0.0.1").allowed
    assert "10.0.0.1" not in denied


def test_an_entry_lasts_its_duration_from_each_add(url: str) -> None:
    probation = ratewarden.KeyList("probation-py", url, duration=0.2)
    probation.add("u")
    time.sleep(0.12)
    probation.add("u")  # again from now
    time.sleep(0.12)
    assert "u" in probation
    time.sleep(0.12)
    assert "u" not in probation


def test_asyncio_forms(url: str) -> None:
    allowed = ratewarden.KeyList("allowed-py", url)

    async def run() -> None:
        await allowed.aadd("partner")
        assert await allowed.acontains("partner")
        await allowed.aremove("partner")
        assert not await allowed.acontains("partner")

    asyncio.run(run())


def test_bad_input() -> None:
    for name in ["", "has space", "x" * 65, "brace{", 7]:
        with pytest.raises(ratewarden.InvalidArgumentError):
            ratewarden.KeyList(name)  # type: ignore[arg-type]
    for duration in [0, -1, 0.0001, 3651 * 86400.0, float("nan"), True]:
        with pytest.raises(ratewarden.InvalidArgumentError):
            ratewarden.KeyList("ok", duration=duration)
    with pytest.raises(TypeError):
        ratewarden.KeyList("ok").add(7)  # type: ignore[arg-type]
    # A list's keys are a limiter's: 1 to 4096 bytes, its name not counted.
    for key in ["", "k" * 4097]:
        with pytest.raises(ratewarden.InvalidArgumentError):
            ratewarden.KeyList("ok").add(key)
    longest = ratewarden.KeyList("ok")
    longest.add("k" * 4096)
    assert "k" * 4096 in longest
