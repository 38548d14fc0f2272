"""Pacing outbound calls across processes (docs/pacing.md): 4 processes x 20 concurrent callers -- Python threads,
asyncio tasks, both in one process, and Node async calls -- acquire slots of one Redis key limited to 50/second
(gcra, burst 10) for 4 s, and call a recording server on 127.0.0.1 after each. The server must see at most
50 + burst calls in every sliding 1-s window and 200 + burst in all (within 2%); the waiting processes sleep on
timers, so each uses little CPU (printed; run pytest with -s to see the figures).

Run by scripts/test_polyglot.sh (the installed Python package, the built Node package)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, List

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE.parent / "servers"))
from recorder import Recorder, worst_window  # noqa: E402
from redis_server import RedisServer  # noqa: E402

RATE = 50
POLICY = f"{RATE}/second"
BURST = 10
DURATION_S = 4.0
CALLERS = 20
START_DELAY_S = 3.0  # for every process to start (Node loads its addon, Python imports) before the common start
CPU_BOUND_S = 0.1 * DURATION_S  # each process, during the paced run: a tenth of one core at most


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url + "?timeout=5s"  # a loaded machine may delay an answer past the default 250 ms


def fleet(url: str, key: str, recorder: str, start_at: float) -> List[List[str]]:
    common = [url, key, POLICY, str(BURST), recorder, f"{start_at:.6f}", str(DURATION_S)]
    python = [sys.executable, str(HERE / "pacing_worker.py"), *common]
    node = [shutil.which("node") or "node", str(HERE / "pacing_worker.js"), *common]
    return [
        [*python, "py-threads", str(CALLERS), "0"],
        [*python, "py-asyncio", "0", str(CALLERS)],
        [*python, "py-mixed", str(CALLERS // 2), str(CALLERS - CALLERS // 2)],
        [*node, "node", str(CALLERS)],
    ]


def test_four_processes_share_one_pace(redis_url: str) -> None:
    with Recorder() as recorder:
        start_at = time.time() + START_DELAY_S
        procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for command in fleet(redis_url, f"pace-{start_at}", recorder.url, start_at)]
        reports = []
        try:
            for proc in procs:
                out, err = proc.communicate(timeout=60)
                assert proc.returncode == 0, err
                reports.append(json.loads(out))
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
        arrivals = recorder.arrivals()  # the warm-up requests left out

    total, worst = len(arrivals), worst_window(arrivals)
    expected = RATE * DURATION_S + BURST
    print(f"\npacing fleet: {total} calls (expected {expected:.0f} +-2%), worst 1-s window {worst} "
          f"(limit {RATE} + burst {BURST} = {RATE + BURST}), span {arrivals[-1] - arrivals[0]:.2f} s")
    for r in reports:
        print(f"  {r['name']:10} {r['calls']:4} calls, CPU {r['cpu_paced_s'] * 1000:6.1f} ms during the "
              f"{DURATION_S:.0f} s run ({r['cpu_s'] * 1000:.0f} ms in all), started {r['late_s'] * 1000:.1f} ms late")
    assert sum(r["calls"] for r in reports) == total
    assert worst <= RATE + BURST
    assert abs(total - expected) <= 0.02 * expected
    assert all(r["calls"] > 0 for r in reports), reports  # every runtime took part
    for r in reports:
        assert r["cpu_paced_s"] < CPU_BOUND_S, r
