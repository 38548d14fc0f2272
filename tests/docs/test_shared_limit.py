"""The README's Python and Node programs enforce ONE limit: run against one fresh redis-server, the Flask program's
three login attempts as alice and then the Express program's three use the same 5-per-minute count — the key
`login:alice` under the same policy and prefix — so the Node program's third attempt is refused."""
from __future__ import annotations

import re

import pytest

from test_snippets import BLOCKS, DEFAULT_REDIS, RedisServer, execute


def readme_block(lang: str):
    found = [b for b in BLOCKS if b.file == "README.md" and b.info == lang and "/login" in b.code]
    assert len(found) == 1, f"expected one README {lang} block with a /login route, found {len(found)}"
    return found[0]


def statuses(output: str, app: str) -> list[int]:
    return [int(s) for s in re.findall(rf"^{app}: attempt \d as alice -> (\d{{3}})", output, re.M)]


def test_python_and_node_share_one_limit(request: pytest.FixtureRequest) -> None:
    with RedisServer() as redis:
        address = f"127.0.0.1:{redis.port}"
        outputs = []
        for lang in ("python", "js"):
            block = readme_block(lang)
            result = execute(block, block.code.replace(DEFAULT_REDIS, address), request)
            assert result.returncode == 0, f"{block.id}:\n{result.stdout}"
            outputs.append(result.stdout)
    flask, express = statuses(outputs[0], "Flask"), statuses(outputs[1], "Express")
    assert flask == [200, 200, 200], outputs[0]
    assert express == [200, 200, 429], outputs[1]  # attempts 4 and 5 of alice's 5, then the 6th refused
