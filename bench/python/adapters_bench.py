"""Issue 18's HTTP benchmark: each new adapter's throughput over its bare app, and over the framework's usual peer, in
one run — FastAPI under uvicorn (one worker, uvloop + httptools) with ratewarden.asgi and slowapi, Django under
gunicorn (sync workers, 2 x cores + 1) with ratewarden.django and django-ratelimit — on the memory store and on
Redis, allowed requests (``/``) and denied ones (``/denied``: a limit used up before measuring) measured apart.
(Flask's rows are http_bench.py's.)

The load generator is wrk with one thread and 16 connections: light, but it shares the 2 cores with the server and
redis-server, so only ratios of one run mean anything. All servers run at once; each round measures, per framework,
the bare app, every case, then the bare app again; a case's ratio for the round is its requests/s over the mean of
the two bare measures around it, and its ratio to the peer is over the peer's measure of the same round, store and
traffic. Prints JSON lines (report.py's ``adapters.`` rows): medians over the rounds, their spread, the targets
(>= 0.95 of the bare app on the memory store, >= 0.85 on Redis, >= 1.0 of the peer).

BENCH_ROUNDS (default 5), BENCH_SECONDS per measure (default 2), BENCH_ONLY (a regular expression on
"framework.case").
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
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
    return [sys.executable, "-m", "gunicorn", "-w", "5", "-b", f"127.0.0.1:{port}", "--chdir", str(HERE),
            "django_app:application"]


PEERS = {"fastapi": "slowapi", "django": "django-ratelimit"}


class Case(NamedTuple):
    framework: str
    variant: str  # ratewarden or the peer
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


CASES = [Case(f, v, s, t) for f in PEERS for v in ("ratewarden", PEERS[f]) for s in ("memory", "redis")
         for t in ("allowed", "denied")]


def get(port: int, path: str) -> Tuple[int, Dict[str, str]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}


def check_answers(port: int, case: Case) -> None:
    """Allowed: a 200 with rate-limit fields; denied: a 429 (ratewarden's and slowapi's with Retry-After)."""
    status, headers = get(port, case.path)
    if case.traffic == "allowed":
        limited = case.variant == "django-ratelimit" or headers.keys() & {"ratelimit", "x-ratelimit-limit"}
        if status != 200 or not limited:
            raise SystemExit(f"{case.framework}.{case.name}: expected a 200 with rate-limit fields: {status} {headers}")
    elif status != 429 or (case.variant != "django-ratelimit" and "retry-after" not in headers):
        raise SystemExit(f"{case.framework}.{case.name}: expected a 429: {status} {headers}")


def main() -> None:
    cases = [c for c in CASES if re.search(ONLY, f"{c.framework}.{c.name}")]
    frameworks = list(dict.fromkeys(c.framework for c in cases))
    servers: Dict[str, Tuple[int, int]] = {}  # "framework.app": (port, pid)
    processes: List[subprocess.Popen[bytes]] = []
    try:
        for framework in frameworks:
            for app in ["bare.memory", *dict.fromkeys(c.app for c in cases if c.framework == framework)]:
                variant, store = app.split(".")
                port = free_port()
                env = {**os.environ, "BENCH_VARIANT": variant,
                       "BENCH_STORE": "memory://" if store == "memory" else REDIS}
                processes.append(subprocess.Popen(server_command(framework, port), env=env, cwd=HERE,
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                servers[f"{framework}.{app}"] = (port, processes[-1].pid)
        for port, _ in servers.values():
            wait_for(port)
        for case in cases:
            port = servers[f"{case.framework}.{case.app}"][0]
            if case.traffic == "denied":
                get(port, "/denied")  # uses up the key's one request (the Django apps did it as they loaded)
            check_answers(port, case)
            wrk(port, case.path, "1", case.traffic == "denied")  # warm-up: imports, connections, scripts
        bare = {f: (Measure(), Measure()) for f in frameworks}
        measures = {c: Measure() for c in cases}
        for _ in range(ROUNDS):
            for framework, (before, after) in bare.items():
                port, pid = servers[f"{framework}.bare.memory"]
                before.take(port, pid, "/", False)
                for case in cases:
                    if case.framework == framework:
                        port_, pid_ = servers[f"{framework}.{case.app}"]
                        measures[case].rps.append(wrk(port_, case.path, SECONDS, case.traffic == "denied")[0])
                after.take(port, pid, "/", False)
        for framework, (before, after) in bare.items():
            bare_rps = [(a + b) / 2 for a, b in zip(before.rps, after.rps)]
            print(json.dumps({"name": f"adapters.{framework}.bare", "rps": statistics.median(bare_rps)}), flush=True)
            for case in (c for c in cases if c.framework == framework):
                rps = measures[case].rps
                ratios = sorted(r / b for r, b in zip(rps, bare_rps))
                record = {"name": f"adapters.{framework}.{case.name}", "rps": statistics.median(rps),
                          "ratio": statistics.median(ratios), "ratio_min": ratios[0], "ratio_max": ratios[-1],
                          "target": case.target}
                peer = Case(framework, PEERS[framework], case.store, case.traffic)
                if case.variant == "ratewarden" and peer in measures:
                    vs = sorted(r / p for r, p in zip(rps, measures[peer].rps))
                    record.update(peer=peer.variant, peer_ratio=statistics.median(vs), peer_ratio_min=vs[0],
                                  peer_ratio_max=vs[-1], peer_target=1.0)
                print(json.dumps(record), flush=True)
    finally:
        for p in processes:
            p.terminate()
        for p in processes:
            p.wait()


if __name__ == "__main__":
    main()
