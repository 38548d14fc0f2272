"""fork() after a shared store was used: each child gets only its own decisions (issue: children of a process that
had called Redis read each other's replies through the sockets they inherited)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

import ratewarden
from redis_server import RedisCluster, RedisServer, free_port


def _wait(pid: int, limit_s: float = 20.0) -> int:
    """The child's exit code; a child still running after `limit_s` is killed and reported as hung (-1)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return -1


def _children_get_their_own_decisions(url: str) -> None:
    prefix = f"fork{os.getpid()}-{time.monotonic_ns()}"
    limiters = [ratewarden.Limiter(f"{(i + 1) * 1000}/day", url, prefix=prefix) for i in range(8)]
    for i, limiter in enumerate(limiters):
        assert limiter.hit(f"child{i}").used == 1
    parent = ratewarden.Limiter("100000/day", url, prefix=prefix)
    assert parent.hit("parent").used == 1
    pids = []
    for i in range(8):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                for n in range(300):
                    d = limiters[i].hit(f"child{i}")
                    if not d.allowed or d.limit != (i + 1) * 1000 or d.used != n + 2:
                        code = 1  # a decision that belongs to another process
                        break
            except BaseException:
                code = 2
            os._exit(code)
        pids.append(pid)
    used = 1
    for _ in range(100):  # the parent, meanwhile
        used += 1
        assert parent.hit("parent").used == used
    assert [_wait(pid) for pid in pids] == [0] * 8  # 1: another's decision, 2: an error, -1: hung
    assert [limiters[i].peek(f"child{i}").used for i in range(8)] == [301] * 8
    assert parent.hit("parent").used == used + 1  # and after


def test_forked_children_of_a_redis_user(redis: RedisServer) -> None:
    _children_get_their_own_decisions(redis.url)


def test_forked_children_of_a_cluster_user(cluster: RedisCluster) -> None:
    _children_get_their_own_decisions(cluster.url)


_pool_limiters: List[ratewarden.Limiter] = []


def _pool_task(i: int) -> List[Tuple[int, int]]:
    return [(d.limit, d.used) for d in (_pool_limiters[i].hit(f"pool{i}") for _ in range(50))]


def test_multiprocessing_fork_pool(redis: RedisServer) -> None:
    prefix = f"mp{os.getpid()}-{time.monotonic_ns()}"
    _pool_limiters[:] = [ratewarden.Limiter(f"{(i + 1) * 100}/day", redis.url, prefix=prefix) for i in range(4)]
    for i, limiter in enumerate(_pool_limiters):
        assert limiter.hit(f"pool{i}").used == 1  # used in the parent before the pool forks
    with multiprocessing.get_context("fork").Pool(4) as pool:
        results = pool.map(_pool_task, range(4))
    for i, decisions in enumerate(results):
        assert decisions == [((i + 1) * 100, n + 2) for n in range(50)]


def test_fork_while_threads_have_calls_in_flight(redis: RedisServer) -> None:
    store = ratewarden.open_store(redis.url)
    busy = ratewarden.Limiter("100000000/day", store, prefix=f"busy{os.getpid()}")
    stop = threading.Event()
    errors: List[BaseException] = []

    def hammer(t: int) -> int:
        n = 0
        while not stop.is_set():
            try:
                busy.hit(f"thread{t}")
                n += 1
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
        return n

    with ThreadPoolExecutor(4) as threads:
        counts = [threads.submit(hammer, t) for t in range(4)]
        for _ in range(50):
            time.sleep(0.002)
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    own = ratewarden.Limiter("10/day", store, prefix=f"busy-child{os.getpid()}")
                    code = 0 if [own.hit("k").used for _ in range(10)] == list(range(1, 11)) else 1
                except BaseException:
                    code = 2
                os._exit(code)
            assert _wait(pid, 10) == 0
        stop.set()
        assert sum(c.result() for c in counts) > 0
    assert errors == []


def test_gunicorn_preload_workers_get_their_own_decisions(redis: RedisServer) -> None:
    port = free_port()
    prefix = f"gunicorn{os.getpid()}-{time.monotonic_ns()}"
    gunicorn = Path(sys.executable).parent / "gunicorn"
    server = subprocess.Popen(
        [str(gunicorn), "--preload", "-w", "4", "-k", "sync", "-b", f"127.0.0.1:{port}", "prefork_app:app"],
        cwd=Path(__file__).with_name("apps"), env={**os.environ, "RW_TEST_STORE": redis.url, "RW_TEST_PREFIX": prefix},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        _wait_for_http(port, server)
        seen: Dict[int, List[Tuple[int, str, str]]] = {}

        def client(i: int) -> None:
            out = seen.setdefault(i, [])
            for _ in range(250):
                req = urllib.request.Request(f"http://127.0.0.1:{port}/client/{i}", headers={"X-Client": f"client{i}"})
                try:
                    with urllib.request.urlopen(req, timeout=10) as r:
                        out.append((r.status, r.headers["RateLimit"], r.headers["RateLimit-Policy"]))
                except urllib.error.HTTPError as e:
                    out.append((e.code, e.headers["RateLimit"], e.headers["RateLimit-Policy"]))

        with ThreadPoolExecutor(8) as clients:
            list(clients.map(client, range(8)))
        for i in range(8):
            limit = 100 if i == 0 else 1000 * i
            statuses = [s for s, _, _ in seen[i]]
            assert statuses.count(200) == min(limit, 250), f"client {i}"
            assert all(f"q={limit}" in policy for _, _, policy in seen[i]), f"client {i}: another's policy"
            remaining = sorted((int(h.split("r=")[1].split(";")[0]) for s, h, _ in seen[i] if s == 200), reverse=True)
            assert remaining == list(range(limit - 1, limit - 1 - min(limit, 250), -1)), f"client {i}: another's counts"
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert "Traceback" not in err, err


def _wait_for_http(port: int, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert server.poll() is None, server.communicate()[1]
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/nothing", timeout=1)
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("gunicorn did not answer within 30 s")
