"""Fixtures: real redis-server processes (started here, never skipped) and the stores every case runs against."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from gate_proxy import GateProxy
from redis_server import PostgresServer, RedisCluster, RedisServer, free_port


@pytest.fixture(scope="session")
def redis() -> Iterator[RedisServer]:
    """One server for the whole session; tests keep apart by key or prefix."""
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def cluster() -> Iterator[RedisCluster]:
    """One 3-master cluster for the whole session."""
    with RedisCluster() as c:
        yield c


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL for the whole session; tests keep apart by key or prefix."""
    with PostgresServer() as server:
        yield server


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A server of the test's own, which it may kill and restart."""
    with RedisServer() as server:
        yield server


@pytest.fixture(params=["memory", "redis"])
def store_url(request: pytest.FixtureRequest) -> str:
    """Each test using it runs once on the memory store and once on Redis."""
    if request.param == "memory":
        return "memory://"
    return request.getfixturevalue("redis").url


DELAY_S = 0.05


@pytest.fixture
def slow_redis(redis: RedisServer) -> Iterator[str]:
    """A Redis URL whose every call takes DELAY_S more, through delay_proxy.py."""
    port = free_port()
    proxy = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("delay_proxy.py")), str(port), str(redis.port), str(DELAY_S)],
        stdout=subprocess.PIPE, text=True,
    )
    assert proxy.stdout is not None and proxy.stdout.readline().strip() == "ready"
    yield f"redis://127.0.0.1:{port}?pool=4&timeout=5s"
    proxy.kill()
    proxy.wait()


@pytest.fixture
def gated_redis(redis: RedisServer) -> Iterator[GateProxy]:
    """A gate before the session's Redis (gate_proxy.py); calls wait on it as long as a test needs (timeout=60s)."""
    proxy = GateProxy(redis.port, "redis://127.0.0.1:{port}?pool=4&timeout=60s")
    yield proxy
    proxy.close()
