"""A deny list and an allow list held in one Redis (docs/key-lists.md), seen by Python and Node at once: what one
runtime adds the other finds, what one removes the other no longer finds, and an entry ends after its duration for
both. Run by scripts/test_polyglot.sh (the installed Python package, the built Node addon)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, List

import pytest

import ratewarden

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
from redis_server import RedisServer  # noqa: E402

NODE_LIST = """
const { KeyList } = require(process.argv[1]);
const [url, name, durationMs, ...ops] = process.argv.slice(2);
(async () => {
  const list = new KeyList({ name, store: url, durationMs: Number(durationMs) });
  const out = [];
  for (const op of ops) {
    const [verb, key] = op.split('=');
    if (verb === 'has') out.push(await list.has(key));
    else await list[verb](key);
  }
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
"""


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def node(url: str, name: str, duration_ms: int, *ops: str) -> List[bool]:
    run = subprocess.run([shutil.which("node") or "node", "-e", NODE_LIST, str(HERE.parents[1]), url, name,
                          str(duration_ms), *ops], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_python_and_node_share_a_deny_list(redis: RedisServer) -> None:
    blocked = ratewarden.KeyList("blocked", redis.url, duration=3600)
    blocked.add("203.0.113.7")
    assert node(redis.url, "blocked", 3600000, "has=203.0.113.7", "has=203.0.113.8") == [True, False]
    node(redis.url, "blocked", 3600000, "add=203.0.113.8", "remove=203.0.113.7")
    assert "203.0.113.8" in blocked
    assert not blocked.contains("203.0.113.7")
    assert 3599 < blocked.expires_in("203.0.113.8") <= 3600
    # Another list, or the same name with another duration, is another list.
    assert not ratewarden.KeyList("allowed", redis.url, duration=3600).contains("203.0.113.8")
    assert node(redis.url, "blocked", 60000, "has=203.0.113.8") == [False]


def test_an_entry_ends_after_its_duration_for_both(redis: RedisServer) -> None:
    # 5 s: long enough for a Node process to start and ask on a machine as busy as they come (0.3 s was not, under
    # stress-ng --cpu 6); then the end is waited for, not slept past.
    short = ratewarden.KeyList("probation", redis.url, duration=5)
    short.add("user-42")
    assert node(redis.url, "probation", 5000, "has=user-42") == [True]
    deadline = time.monotonic() + 30
    while short.contains("user-42") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not short.contains("user-42")
    assert node(redis.url, "probation", 5000, "has=user-42") == [False]
