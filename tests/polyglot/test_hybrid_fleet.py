"""One limit across runtimes in the hybrid modes (docs/hybrid.md): 8 processes x 4 concurrent callers — 4 Python
processes with 4 threads each, 4 Node processes with 4 calls in flight each — on one key on one Redis.

- local_first, every exact algorithm: exactly the limit admitted in all, and denials answered in-process.
- a mix of modes on a fixed window: exactly the limit with exact and local_first processes; with async processes
  too, never more than the limit and at most P x 2c less (P async processes, c their largest lease).

Run by scripts/test_polyglot.sh (the installed Python package, the built Node addon)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
from redis_server import RedisServer  # noqa: E402  (the test servers of every Python suite)

EXACT_ALGORITHMS = ["fixed_window", "sliding_window", "sliding_log", "token_bucket", "gcra"]
CALLERS = 4


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def worker(runtime: str) -> List[str]:
    if runtime == "python":
        return [sys.executable, str(HERE / "hybrid_worker.py")]
    return [shutil.which("node") or "node", str(HERE / "hybrid_worker.js")]


def run_fleet(members: List[tuple], algorithm: str, policy: str, key: str, hits: int) -> List[Dict[str, int]]:
    """`members`: (runtime, url) per process. Starts them all, lets them go at once when every one is ready (its
    hybrid store has read the reset log), and returns what each reports."""
    procs = [subprocess.Popen([*worker(runtime), url, algorithm, policy, key, str(CALLERS), str(hits)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for runtime, url in members]
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.strip() == "ready", f"{proc.args}: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = []
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, f"{proc.args}: {err}"
            reports.append(json.loads(out.strip().splitlines()[-1]))
        return reports
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.parametrize("algorithm", EXACT_ALGORITHMS)
def test_local_first_fleet_admits_exactly_the_limit(redis: RedisServer, algorithm: str) -> None:
    url = f"{redis.url}?mode=local_first"
    members = [("python", url)] * 4 + [("node", url)] * 4
    # 200 places, 8 x 4 x 100 = 3,200 hits; "per day": nothing refills or expires during the run.
    reports = run_fleet(members, algorithm, "200/day", f"hybrid-fleet-{algorithm}", 100)
    assert sum(r["allowed"] for r in reports) == 200, reports
    assert sum(r["local_denials"] for r in reports) > 0, reports
    assert all(r["local_allows"] == 0 for r in reports), reports  # local_first admits nothing itself


@pytest.mark.parametrize("with_async", [False, True], ids=["exact+local_first", "exact+local_first+async"])
def test_a_mix_of_modes_shares_one_fixed_window(redis: RedisServer, with_async: bool) -> None:
    base = redis.url
    exact, local_first, asynchronous = base, f"{base}?mode=local_first", f"{base}?mode=async&sync=10ms"
    third = asynchronous if with_async else local_first
    members = [("python", exact), ("python", local_first), ("python", third), ("python", local_first),
               ("node", third), ("node", exact), ("node", local_first), ("node", third)]
    limit = 4000
    # 8 x 4 x 250 = 8,000 hits for 4,000 places: long enough for async leases to be topped up (sync=10ms).
    reports = run_fleet(members, "fixed_window", f"{limit}/day", f"hybrid-mix-{int(with_async)}", 250)
    allowed = sum(r["allowed"] for r in reports)
    by_mode = [(url.partition("?")[2] or "mode=exact", r) for (_, url), r in zip(members, reports)]
    if not with_async:
        assert allowed == limit, by_mode
        return
    processes = sum(1 for _, url in members if url == asynchronous)
    c = max(1, limit * 10 // 1000)  # lease=1 (%), the default
    print(f"mixed modes with {processes} async processes: {allowed} admitted of {limit} "
          f"(bound {limit - processes * 2 * c}..{limit})")
    assert limit - processes * 2 * c <= allowed <= limit, by_mode
    assert sum(r["local_allows"] for _, r in zip(members, reports)) > 0, by_mode  # the leases were used
    assert sum(r["local_denials"] for r in reports) > 0, by_mode
