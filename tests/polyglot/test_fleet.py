"""One limit across runtimes: a C program, the Go example, two Python and two Node processes hit the same keys with
the same policy through one Redis (and once through a 3-master Redis Cluster), for every algorithm.

Run by scripts/test_polyglot.sh, which provides the environment: RW_FLEET_C (the C worker), RW_FLEET_GO (the Go
example, built), and the installed Python package and built Node package."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, List

import pytest

from ratewarden import _native

HERE = Path(__file__).resolve().parent
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


def free_port(cluster_bus: bool = False) -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not cluster_bus or port + 10000 < 65536:
            return port


def start_redis(port: int, directory: str, *extra: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", directory, *extra], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).stdout.strip() != b"PONG":
        assert time.monotonic() < deadline, "redis-server did not start"
        time.sleep(0.05)
    return proc


@pytest.fixture(scope="module", params=["redis", "cluster"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    directory = tempfile.mkdtemp(prefix="rw-fleet-")
    procs: List[subprocess.Popen[bytes]] = []
    try:
        if request.param == "redis":
            port = free_port()
            procs.append(start_redis(port, directory))
            yield f"redis://127.0.0.1:{port}"
            return
        ports = [free_port(cluster_bus=True) for _ in range(3)]
        for port in ports:
            os.makedirs(f"{directory}/{port}")
            procs.append(start_redis(port, f"{directory}/{port}", "--cluster-enabled", "yes",
                                     "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"))
        subprocess.run(["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
                        "--cluster-replicas", "0", "--cluster-yes"], check=True, capture_output=True)
        deadline = time.monotonic() + 30
        while b"cluster_state:ok" not in subprocess.run(["redis-cli", "-p", str(ports[0]), "cluster", "info"],
                                                       capture_output=True).stdout:
            assert time.monotonic() < deadline, "the cluster did not come up"
            time.sleep(0.1)
        yield "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in ports)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        shutil.rmtree(directory, ignore_errors=True)


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
