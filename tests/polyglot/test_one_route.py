"""One route, six frameworks, one limit: POST /api/users/<user_id>/login, 5/minute per user, written as each
framework writes it (under a prefix, with a path parameter) in Flask and Django under gunicorn, FastAPI under uvicorn,
Express, Fastify and Koa under Node's http — on one Redis. Without naming a scope, every adapter counts the route
under one name (its path template, docs/python.md "Route names"), so requests spread over the six apps get exactly
the limit, and the one counter is where the docs say it is.

Run by scripts/test_polyglot.sh (the installed Python package in .venv, the built Node package)."""
from __future__ import annotations

import ctypes
import http.client
import os
import shutil
import signal
import subprocess
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

HERE = Path(__file__).resolve().parent
APPS = HERE / "route_apps"
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "python"))
from redis_server import RedisServer, free_port, wait_listening  # noqa: E402

FRAMEWORKS = ["flask", "fastapi", "django", "express", "fastify", "koa"]
ROUTE_NAME = "/api/users/:user_id/login"  # tests/conformance/route_names.json names it alike for each framework


def _die_with_parent() -> None:  # a server outlives no test process, however it ends
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def command(framework: str, port: int, store: str) -> Tuple[List[str], dict]:
    env = {**os.environ, "RW_STORE": store, "PYTHONPATH": str(APPS)}
    gunicorn = [sys.executable, "-m", "gunicorn", "-w", "2", "-b", f"127.0.0.1:{port}", "--chdir", str(APPS)]
    if framework == "flask":
        return [*gunicorn, "route_flask:app"], env
    if framework == "django":
        return [*gunicorn, "route_django:application"], {**env, "DJANGO_SETTINGS_MODULE": "route_django"}
    if framework == "fastapi":
        return [sys.executable, "-m", "uvicorn", "--factory", "route_fastapi:make_app", "--app-dir", str(APPS),
                "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"], env
    node = shutil.which("node") or "node"
    return [node, str(APPS / "route_node.js"), framework, str(port), store], env


@contextmanager
def serve(framework: str, store: str, log: Path) -> Iterator[int]:
    """The framework's app on a free port, answering; stopped with its process group after."""
    port = free_port()
    cmd, env = command(framework, port, store)
    with log.open("wb") as out:
        process = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True, preexec_fn=_die_with_parent)
    try:
        wait_listening(port, process, log, framework)
        yield port
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def login(port: int, user_id: int, user: str) -> Tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", f"/api/users/{user_id}/login", body=b"", headers={"X-User": user})
    response = conn.getresponse()
    answer = (response.status, response.read().decode())
    conn.close()
    return answer


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[RedisServer, List[int]]]:
    logs = tmp_path_factory.mktemp("route-apps")
    with RedisServer() as redis, ExitStack() as stack:
        ports = [stack.enter_context(serve(f, redis.url, logs / f"{f}.log")) for f in FRAMEWORKS]
        yield redis, ports


def test_one_route_in_six_frameworks_admits_exactly_the_limit(apps: Tuple[RedisServer, List[int]]) -> None:
    redis, ports = apps
    answers = [login(ports[i % 6], 100 + i, "carol") for i in range(12)]  # two rounds, another user id each time
    assert [status for status, _ in answers] == [200] * 5 + [429] * 7, list(zip(FRAMEWORKS * 2, answers))
    assert all(body == "welcome" for status, body in answers if status == 200)
    # One counter, named as the docs say; another user has a count of their own in every app.
    assert redis.cli("KEYS", "*carol*").split() == [f"rw:{{{ROUTE_NAME}:carol}}:v3:fixed_window:5:60000"]
    assert [login(port, 1, "dave")[0] for port in ports] == [200] * 5 + [429]
