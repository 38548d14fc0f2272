"""The per-request cost of each HTTP adapter in-process, without a server or a load generator: the bench apps
(fastapi_app.py, django_app.py, flask_app.py; BENCH_VARIANT, BENCH_STORE) called as their server calls them — the
ASGI app with a scope, receive and send on uvloop; Django's and Flask's WSGI application with an environ and
start_response — one request after another on one path.

    request_cost.py REDIS_URL            every framework, variant, store and path, BENCH_ROUNDS (default 5) interleaved
                                         rounds: the median µs per request (wall and process CPU), and each case
                                         minus the bare app of the same round
    request_cost.py one FRAMEWORK VARIANT STORE PATH CALLS     one measure (a subprocess per measure: Django's
                                         settings are per process), one JSON line

The wall time of a Redis case includes the round trip; its CPU time includes the store's I/O thread. BENCH_ONLY: a
regular expression on "framework.variant.store.traffic".
"""

from __future__ import annotations

import gc
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

HERE = Path(__file__).parent
FRAMEWORKS = ("fastapi", "django", "flask")
PEERS = {"fastapi": "slowapi", "django": "django-ratelimit", "flask": "flask-limiter"}
VARIANTS = ("bare", "floor", "hand", "ratewarden", "peer")


def asgi_driver(app: Any, path: str) -> Callable[[int], None]:
    import asyncio

    import uvloop

    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
             "query_string": b"", "headers": [(b"host", b"bench"), (b"user-agent", b"wrk")],
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}
    request = {"type": "http.request", "body": b"", "more_body": False}

    async def receive() -> Dict[str, Any]:
        return request

    async def send(message: Dict[str, Any]) -> None:
        pass

    async def run(n: int) -> None:
        for _ in range(n):
            await app(dict(scope), receive, send)

    loop = uvloop.new_event_loop()
    return lambda n: loop.run_until_complete(run(n))


def wsgi_driver(app: Any, path: str) -> Callable[[int], None]:
    from io import BytesIO

    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": "",
               "SERVER_NAME": "bench", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
               "REMOTE_PORT": "50000", "HTTP_HOST": "bench", "HTTP_USER_AGENT": "wrk", "wsgi.version": (1, 0),
               "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr, "wsgi.multithread": False,
               "wsgi.multiprocess": True, "wsgi.run_once": False}

    def start_response(status: str, headers: List[Tuple[str, str]], exc_info: Any = None) -> None:
        pass

    def run(n: int) -> None:
        for _ in range(n):
            env = dict(environ)
            env["wsgi.input"] = BytesIO()
            result = app(env, start_response)
            for _chunk in result:
                pass
            close = getattr(result, "close", None)
            if close is not None:
                close()

    return run


def one(framework: str, variant: str, store: str, path: str, calls: int) -> None:
    sys.path.insert(0, str(HERE))
    os.environ["BENCH_VARIANT"] = PEERS[framework] if variant == "peer" else variant
    os.environ["BENCH_STORE"] = store
    if framework == "fastapi":
        import fastapi_app

        drive = asgi_driver(fastapi_app.app, path)
    elif framework == "django":
        import django_app

        drive = wsgi_driver(django_app.application, path)
    else:
        import flask_app

        drive = wsgi_driver(flask_app.app.wsgi_app, path)
    drive(max(calls // 5, 200))  # warm-up
    gc.collect()
    gc.disable()
    best: Dict[str, float] = {}
    batch = 50
    for i in range(calls // batch):  # the least of many short batches: what the code costs when nothing else runs
        wall, cpu = time.perf_counter_ns(), time.process_time_ns()
        drive(batch)
        cpu, wall = time.process_time_ns() - cpu, time.perf_counter_ns() - wall
        for name, ns in (("wall_us", wall), ("cpu_us", cpu)):
            best[name] = min(best.get(name, ns), ns / batch / 1000)
        if i % 20 == 19:
            gc.collect()
    print(json.dumps(best))


def main() -> None:
    redis = sys.argv[1]
    rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
    only = os.environ.get("BENCH_ONLY", "")
    cases = [(f, v, s, t) for f in FRAMEWORKS for s in ("memory", "redis") for t in ("allowed", "denied")
             for v in VARIANTS if re.search(only, f"{f}.{v}.{s}.{t}")]
    results: Dict[Tuple[str, ...], List[Dict[str, float]]] = {c: [] for c in cases}
    for _ in range(rounds):
        for case in cases:
            framework, variant, store, traffic = case
            calls = 5_000 if store == "memory" else 1_000
            out = subprocess.run(
                [sys.executable, "-P", __file__, "one", framework, variant, "memory://" if store == "memory" else redis,
                 "/" if traffic == "allowed" else "/denied", str(calls)],
                capture_output=True, text=True, check=True, cwd=HERE).stdout
            results[case].append(json.loads(out.splitlines()[-1]))
    print(f"| case | wall µs/request | CPU µs/request | CPU over bare, µs |")
    print("|---|---|---|---|")
    for case, measures in results.items():
        framework, variant, store, traffic = case
        wall = statistics.median(m["wall_us"] for m in measures)
        cpu = statistics.median(m["cpu_us"] for m in measures)
        bare = results.get((framework, "bare", store, traffic))
        over = (f"{statistics.median(m['cpu_us'] - b['cpu_us'] for m, b in zip(measures, bare)):+.1f}"
                if bare and variant != "bare" else "")
        print(f"| {'.'.join(case)} | {wall:.1f} | {cpu:.1f} | {over} |", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "one":
        one(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    else:
        main()
