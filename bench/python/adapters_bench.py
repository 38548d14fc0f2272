"""Issue 18's HTTP benchmark: each adapter's throughput over its bare app, over the floor, and over the framework's
usual peer, in one run — FastAPI under uvicorn (one worker, uvloop + httptools) with ratewarden.asgi and slowapi,
Django under gunicorn (sync workers, 2 x cores + 1) with ratewarden.django and django-ratelimit, Flask under gunicorn
(the same) with ratewarden.flask and Flask-Limiter — on the memory store and on Redis, allowed requests (``/``) and
denied ones (``/denied``: a limit used up before measuring) measured apart.

The floor is the bare app that sends the fields ratewarden sends, as constant text (a denied request: the same 429,
body and fields), and on Redis also makes one INCR per request the fastest way that framework offers (redis.asyncio
for FastAPI, redis-py for Django and Flask): what any limiter that sends those fields, or keeps its counts in Redis,
costs at least. Its own ratio to the bare app is the most a limiter can reach there: a target above it cannot be met.
The hand-written limiter (hand.py: the view calls ratewarden.Limiter and sends the same fields) is what a user would
write instead of an adapter: ours against it is the adapter's own cost, its options and its framework hooks.

The load generator is wrk with one thread and 16 connections: light, but it shares the 2 cores with the server and
redis-server, so only ratios of one run mean anything. One framework's servers run at a time; each round measures
the bare app, every case, then the bare app again; a case's ratio for the round is its requests/s over the mean of
the two bare measures around it, and its ratios to the floor and the peer are over their measures of the same round,
store and traffic. Prints JSON lines (report.py's ``adapters.`` rows): medians over the rounds, their spread, the
targets (>= 0.95 of the bare app on the memory store, >= 0.85 on Redis, >= 1.0 of the peer).

BENCH_ROUNDS (default 5), BENCH_SECONDS per measure (default 2), BENCH_ONLY (a regular expression on
"framework.variant.store.traffic").
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

sys.path.insert(0, str(Path(__file__).parent))  # run with -P: the helpers beside this file
from http_bench import Measure, free_port, wait_for, wrk  # noqa: E402

REDIS = sys.argv[1]
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
SECONDS = os.environ.get("BENCH_SECONDS", "2")
ONLY = os.environ.get("BENCH_ONLY", "")
HERE = Path(__file__).parent


def server_command(framework: str, port: int) -> List[str]:
    if framework == "fastapi":
        return [sys.executable, "-m", "uvicorn", "fastapi_app:app", "--host", "127.0.0.1", "--port", str(port),
                "--app-dir", str(HERE), "--log-level", "warning", "--no-access-log", "--loop", "uvloop",
                "--http", "httptools"]
    app = "django_app:application" if framework == "django" else "flask_app:app"
    return [sys.executable, "-m", "gunicorn", "-w", "5", "-b", f"127.0.0.1:{port}", "--chdir", str(HERE), app]


PEERS = {"fastapi": "slowapi", "django": "django-ratelimit", "flask": "flask-limiter"}


class Case(NamedTuple):
    framework: str
    variant: str  # ratewarden, the floor, the hand-written limiter (hand.py) or the peer
    store: str  # memory or redis
    traffic: str  # allowed or denied

    @property
    def app(self) -> str:
        return f"{self.variant}.{self.store}"

    @property
    def name(self) -> str:
        return f"{self.variant}.{self.store}.{self.traffic}"

    @property
    def path(self) -> str:
        return "/" if self.traffic == "allowed" else "/denied"

    @property
    def target(self) -> Optional[float]:
        if self.variant != "ratewarden":
            return None
        return 0.95 if self.store == "memory" else 0.85


CASES = [Case(f, v, s, t) for f in PEERS for v in ("ratewarden", "floor", "hand", PEERS[f])
         for s in ("memory", "redis") for t in ("allowed", "denied")]


def get(port: int, path: str) -> Tuple[int, Dict[str, str]]:
    deadline = time.monotonic() + 60  # gunicorn listens before its workers have loaded the app
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
                return response.status, {k.lower(): v for k, v in response.headers.items()}
        except urllib.error.HTTPError as error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}
        except (TimeoutError, ConnectionError, urllib.error.URLError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def check_answers(port: int, case: Case) -> None:
    """Allowed: a 200 with rate-limit fields; denied: a 429 (with Retry-After but django-ratelimit's)."""
    status, headers = get(port, case.path)
    if case.traffic == "allowed":
        limited = case.variant == "django-ratelimit" or headers.keys() & {"ratelimit", "x-ratelimit-limit"}
        if status != 200 or not limited:
            raise SystemExit(f"{case.framework}.{case.name}: expected a 200 with rate-limit fields: {status} {headers}")
        if case.variant in ("ratewarden", "floor", "hand") and headers["ratelimit-policy"] != '"hello";q=1000000000;w=60':
            raise SystemExit(f"{case.framework}.{case.name}: not the fields of the floor: {headers}")
    elif status != 429 or (case.variant != "django-ratelimit" and "retry-after" not in headers):
        raise SystemExit(f"{case.framework}.{case.name}: expected a 429: {status} {headers}")


def main() -> None:
    cases = [c for c in CASES if re.search(ONLY, f"{c.framework}.{c.name}")]
    for framework in dict.fromkeys(c.framework for c in cases):
        run([c for c in cases if c.framework == framework])


def run(cases: List[Case]) -> None:
    """One framework's servers, rounds and records."""
    framework = cases[0].framework
    servers: Dict[str, Tuple[int, int]] = {}  # app: (port, pid)
    processes: List[subprocess.Popen[bytes]] = []
    try:
        for app in ["bare.memory", *dict.fromkeys(c.app for c in cases)]:
            variant, store = app.split(".")
            port = free_port()
            env = {**os.environ, "BENCH_VARIANT": variant, "BENCH_STORE": "memory://" if store == "memory" else REDIS}
            processes.append(subprocess.Popen(server_command(framework, port), env=env, cwd=HERE,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            servers[app] = (port, processes[-1].pid)
        for port, _ in servers.values():
            wait_for(port)
        for case in cases:
            port = servers[case.app][0]
            if case.traffic == "denied" and case.variant != "floor":
                get(port, "/denied")  # uses up the key's one request (the gunicorn apps did it as they loaded)
            check_answers(port, case)
            wrk(port, case.path, "1", case.traffic == "denied")  # warm-up: imports, connections, scripts
        before, after = Measure(), Measure()
        measures = {c: Measure() for c in cases}
        for _ in range(ROUNDS):
            port, pid = servers["bare.memory"]
            before.take(port, pid, "/", False)
            for case in cases:
                port_, pid_ = servers[case.app]
                measures[case].rps.append(wrk(port_, case.path, SECONDS, case.traffic == "denied")[0])
            after.take(port, pid, "/", False)
        bare_rps = [(a + b) / 2 for a, b in zip(before.rps, after.rps)]
        print(json.dumps({"name": f"adapters.{framework}.bare", "rps": statistics.median(bare_rps)}), flush=True)
        for case in cases:
            rps = measures[case].rps
            ratios = sorted(r / b for r, b in zip(rps, bare_rps))
            record = {"name": f"adapters.{framework}.{case.name}", "rps": statistics.median(rps),
                      "ratio": statistics.median(ratios), "ratio_min": ratios[0], "ratio_max": ratios[-1],
                      "target": case.target}
            if case.variant == "ratewarden":
                for other, key in ((Case(framework, "floor", case.store, case.traffic), "floor"),
                                   (Case(framework, "hand", case.store, case.traffic), "hand"),
                                   (Case(framework, PEERS[framework], case.store, case.traffic), "peer")):
                    if other in measures:
                        vs = sorted(r / p for r, p in zip(rps, measures[other].rps))
                        record.update({f"{key}_ratio": statistics.median(vs), f"{key}_ratio_min": vs[0],
                                       f"{key}_ratio_max": vs[-1]})
                        if key == "peer":
                            record.update(peer=other.variant, peer_target=1.0)
            print(json.dumps(record), flush=True)
    finally:
        for p in processes:
            p.terminate()
        for p in processes:
            p.wait()


if __name__ == "__main__":
    main()
