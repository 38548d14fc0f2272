"""Fixtures: real redis-server processes (started here, never skipped) and the stores every case runs against."""

from __future__ import annotations

from typing import Iterator

import pytest

from redis_server import RedisServer


@pytest.fixture(scope="session")
def redis() -> Iterator[RedisServer]:
    """One server for the whole session; tests keep apart by key or prefix."""
    server = RedisServer()
    server.start()
    yield server
    server.close()


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A server of the test's own, which it may kill and restart."""
    server = RedisServer()
    server.start()
    yield server
    server.close()


@pytest.fixture(params=["memory", "redis"])
def store_url(request: pytest.FixtureRequest) -> str:
    """Each test using it runs once on the memory store and once on Redis."""
    if request.param == "memory":
        return "memory://"
    return request.getfixturevalue("redis").url
