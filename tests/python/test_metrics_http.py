"""The figures of real servers, scraped over HTTP after a known load (docs/python.md, "Metrics and events"): a Flask app
under gunicorn with 2 workers (--preload), each serving its own figures on its own port (ratewarden.prometheus.
start_worker_server in post_fork), on a shared Redis; and a FastAPI app under uvicorn serving them at /metrics. What
the limits decided adds up to the requests, and the denials to what the limits must refuse; promtool accepts the
text."""

from __future__ import annotations

import http.client
import itertools
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple
from urllib.parse import urlencode

from prometheus_client.parser import text_string_to_metric_families

from redis_server import RedisServer, free_port, free_ports, wait_listening

APPS = Path(__file__).with_name("apps")
_prefixes = itertools.count()


@contextmanager
def serve(cmd: List[str], port: int, env: Dict[str, str]) -> Iterator[Path]:
    """The server of ``cmd`` (run in apps/) until the block ends; its log's path. Stopped with its process group."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        with log.open("wb") as out:
            process = subprocess.Popen(cmd, cwd=APPS, env={**os.environ, "PYTHONPATH": str(APPS), **env}, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_listening(port, process, log, cmd[2])
            yield log
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def wait_port(port: int, log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing serves port {port}:\n{log.read_text(errors='replace')}"
            time.sleep(0.05)


def request(port: int, method: str, path: str, form: Optional[Dict[str, str]] = None) -> Tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    body = urlencode(form) if form is not None else None
    headers = {"Content-Type": "application/x-www-form-urlencoded"} if form is not None else {}
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    answer = (response.status, response.read().decode())
    conn.close()
    return answer


def decisions(text: str) -> Dict[Tuple[str, str], float]:
    """ratewarden_decisions_total by (limiter, outcome)."""
    out: Dict[Tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "ratewarden_decisions_total":
                out[(s.labels["limiter"], s.labels["outcome"])] = s.value
    return out


def promtool(text: str) -> None:
    done = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done.stdout + done.stderr


def test_flask_under_gunicorn_with_two_workers_each_on_its_own_port(redis: RedisServer) -> None:
    port, metrics = free_port(), free_ports(2)
    env = {"RW_TEST_STORE": redis.url, "RW_TEST_PREFIX": f"metrics{os.getpid()}-{next(_prefixes)}",
           "RW_METRICS_PORT": str(metrics)}
    cmd = [sys.executable, "-m", "gunicorn", "-w", "2", "-k", "gthread", "--threads", "4", "--preload",
           "-c", "metrics_gunicorn_conf.py", "-b", f"127.0.0.1:{port}", "metrics_flask_app:app"]
    with serve(cmd, port, env) as log:
        for worker_port in (metrics, metrics + 1):  # each worker serves its figures once it is forked
            wait_port(worker_port, log)
        statuses = [request(port, "GET", f"/items/{n}")[0] for n in range(30)]
        assert sorted(statuses) == [200] * 10 + [429] * 20  # 10/minute on a shared Redis: exact across workers
        texts = [request(p, "GET", "/metrics")[1] for p in (metrics, metrics + 1)]
    for text in texts:
        promtool(text)
    name = "/items/:n 10/60s"  # the route's template and its rates, never a path
    scraped = [decisions(text) for text in texts]
    allowed = sum(d.get((name, "allowed"), 0) for d in scraped)
    denied = sum(d.get((name, "denied"), 0) for d in scraped)
    assert (allowed, denied) == (10, 20)
    assert all((name, "allowed") in d for d in scraped)  # every worker has the series, from its start
    assert not any("/items/1" in limiter for d in scraped for limiter, _ in d)
    calls = 0.0
    for text in texts:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name == "ratewarden_store_call_duration_seconds_count" and s.labels["outcome"] == "ok":
                    calls += s.value
    assert calls >= 30  # every decision was a call to Redis


def test_fastapi_under_uvicorn_serves_its_figures_at_metrics() -> None:
    port = free_port()
    env = {"RW_TEST_STORE": "memory://", "RW_TEST_PREFIX": "metrics"}
    cmd = [sys.executable, "-m", "uvicorn", "metrics_asgi_app:app", "--host", "127.0.0.1", "--port", str(port),
           "--app-dir", str(APPS), "--log-level", "warning"]
    with serve(cmd, port, env):
        logins = [request(port, "POST", "/login", {"username": user})[0] for user in ["alice"] * 12 + ["bob"] * 3]
        assert logins == [200] * 5 + [429] * 7 + [200] * 3
        users = [request(port, "GET", f"/users/{n}")[0] for n in range(5)]
        assert users == [200, 200, 429, 429, 429]
        status, text = request(port, "GET", "/metrics/")
        assert status == 200
        status, again = request(port, "GET", "/metrics/")  # scrapes are not limited, and count nothing
    promtool(text)
    d = decisions(text)
    assert (d[("/login 5/60s", "allowed")], d[("/login 5/60s", "denied")]) == (8, 7)
    assert (d[("/users/:user_id 2/60s", "allowed")], d[("/users/:user_id 2/60s", "denied")]) == (2, 3)
    assert decisions(again) == d
    assert 'ratewarden_memory_max_keys{store="memory://' in text


def samples(text: str, name: str) -> Dict[Tuple[Tuple[str, str], ...], float]:
    """The samples of one metric, by their labels."""
    return {tuple(sorted(s.labels.items())): s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == name}


def test_redis_killed_under_fastapi_every_request_is_a_decision_and_fallbacks_say_which(
        own_redis: RedisServer) -> None:
    port = free_port()
    store = own_redis.url + "?timeout=200ms&connect_timeout=200ms&circuit_failures=2"
    env = {"RW_TEST_STORE": store, "RW_TEST_PREFIX": "metrics-killed"}
    cmd = [sys.executable, "-m", "uvicorn", "metrics_asgi_app:app", "--host", "127.0.0.1", "--port", str(port),
           "--app-dir", str(APPS), "--log-level", "warning"]
    with serve(cmd, port, env):
        before = [request(port, "POST", "/login", {"username": "alice"})[0] for _ in range(7)]
        own_redis.kill()
        during = [request(port, "POST", "/login", {"username": "alice"})[0] for _ in range(6)]
        status, text = request(port, "GET", "/metrics/")
    assert (before, during, status) == ([200] * 5 + [429] * 2, [200] * 6, 200)  # fail open, the adapters' default
    promtool(text)
    d = decisions(text)
    assert (d[("/login 5/60s", "allowed")], d[("/login 5/60s", "denied")]) == (11, 2)  # 13 requests, 13 decisions
    assert samples(text, "ratewarden_fallback_decisions_total")[(("limiter", "/login 5/60s"),)] == 6
    errors = samples(text, "ratewarden_store_errors_total")
    assert sum(v for labels, v in errors.items() if dict(labels)["store"].startswith(own_redis.url)) >= 2
    assert samples(text, "ratewarden_circuit_open") and max(samples(text, "ratewarden_circuit_open").values()) == 1
