"""A limiter on a redis+sentinel:// URL: the URL passes through the core (tests/core/sentinel_test.cpp tests the
store itself, failover included), so the package needs nothing of its own."""

from __future__ import annotations

import pytest

import ratewarden
from redis_server import Launcher, free_port


def test_limiter_on_a_sentinel_url_finds_the_master_and_limits() -> None:
    launcher = Launcher("--sentinel")  # a master, its replica, 3 sentinels
    try:
        url = launcher.ready["sentinel"]["url"] + "?timeout=5s"
        limiter = ratewarden.Limiter("2/minute", url, prefix="sentinel")
        assert [limiter.hit("user").allowed for _ in range(3)] == [True, True, False]
    finally:
        launcher.close()


def test_bad_sentinel_urls_and_unreachable_sentinels_are_clear_errors() -> None:
    with pytest.raises(ratewarden.InvalidArgumentError, match="service name"):
        ratewarden.Limiter("2/minute", "redis+sentinel://127.0.0.1:26379")
    limiter = ratewarden.Limiter("2/minute", f"redis+sentinel://127.0.0.1:{free_port()}/mymaster")
    with pytest.raises(ratewarden.StoreError, match="no master for the service"):
        limiter.hit("user")
