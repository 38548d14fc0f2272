"""One limit across runtimes: a C program, the Go example, two Python and two Node processes hit the same keys with
the same policy through one Redis (and once through a 3-master Redis Cluster, once through one PostgreSQL), for
every algorithm.

Run by scripts/test_polyglot.sh, which provides the environment: RW_FLEET_C (the C worker), RW_FLEET_GO (the Go
example, built), and the installed Python package and built Node package."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List

import pytest

from ratewarden import _native

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
from redis_server import PostgresServer, RedisCluster, RedisServer  # noqa: E402  (the test servers of every Python suite)
LIMIT = 1000
HITS = 300  # per process: 6 processes send 1800 hits for 1000 places
ALGORITHMS = _native.algorithms()
POLICY = f"{LIMIT}/hour"  # long enough that nothing refills or expires during the test


def workers() -> List[List[str]]:
    """The command prefix of each fleet member."""
    node = shutil.which("node") or "node"
    return [
        [os.environ["RW_FLEET_C"]],
        [os.environ["RW_FLEET_GO"], "fleet"],
        [sys.executable, str(HERE / "worker.py")],
        [sys.executable, str(HERE / "worker.py")],
        [node, str(HERE / "worker.js")],
        [node, str(HERE / "worker.js")],
    ]


@pytest.fixture(scope="module", params=["redis", "cluster", "postgres"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    servers = {"redis": RedisServer, "cluster": RedisCluster, "postgres": PostgresServer}[request.param]()
    with servers:
        yield servers.url + ("?timeout=5s" if request.param == "postgres" else "")


def run(command: List[str]) -> int:
    out = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"{command}: {out.stderr}"
    return int(out.stdout.strip())


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_fleet_admits_exactly_the_limit(url: str, algorithm: str) -> None:
    key = f"fleet-{algorithm}"
    procs = [subprocess.Popen([*w, "hit", url, algorithm, POLICY, key, str(HITS)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for w in workers()]
    allowed = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        allowed.append(int(out))
    assert sum(allowed) == LIMIT, allowed


def test_each_runtime_sees_the_others(url: str) -> None:
    c, go, py, _, node, _ = workers()
    args = [url, "gcra", "10/hour", "shared-view"]  # one token per 6 minutes: nothing refills meanwhile
    assert run([*node, "hit", *args, "7"]) == 7
    assert run([*py, "peek", *args]) == 3
    assert run([*c, "hit", *args, "1"]) == 1
    assert run([*go, "peek", *args]) == 2
    assert run([*py, "hit", *args, "5"]) == 2
    assert run([*node, "peek", *args]) == 0
