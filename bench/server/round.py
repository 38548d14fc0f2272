#!/usr/bin/env python3
"""One measured round of bench/server/rounds.sh: runs ghz against one server and prints one JSON line.

    round.py SERVER_PID REDIS_PID NAME=VALUE... -- GHZ ARGS...

Around the ghz run it reads utime + stime of SERVER_PID and REDIS_PID from /proc/PID/stat (clock ticks, counting
every thread, ended ones too), samples the server's VmRSS every 50 ms, and takes ghz's own CPU from its rusage. The
line holds the NAME=VALUE tags, ghz's count of OK responses (each one a decision: a denial is an OK response whose
overall_code is OVER_LIMIT), the errors, throughput and latency percentiles, and those CPU times in seconds.
Standard library only.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
from typing import Dict, List

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()  # after "(comm)", which may hold spaces
    return (int(fields[11]) + int(fields[12])) / TICK  # fields 14 and 15 of proc(5)


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main(argv: List[str]) -> int:
    split = argv.index("--")
    server, redis = int(argv[0]), int(argv[1])
    tags: Dict[str, object] = {}
    for tag in argv[2:split]:
        name, value = tag.split("=", 1)
        tags[name] = int(value) if value.isdigit() else value
    ghz = argv[split + 1:]

    peak = [rss_kb(server)]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], rss_kb(server))

    sampler = threading.Thread(target=sample)
    server0, redis0 = cpu_seconds(server), cpu_seconds(redis)
    sampler.start()
    child = subprocess.Popen(ghz, stdout=subprocess.PIPE)
    out, _ = child.communicate()
    server1, redis1 = cpu_seconds(server), cpu_seconds(redis)
    done.set()
    sampler.join()
    if child.returncode != 0:
        sys.exit(f"round.py: ghz exited with {child.returncode}")
    report = json.loads(out)
    ok = report["statusCodeDistribution"].get("OK", 0)
    percentiles = {p["percentage"]: p["latency"] / 1e6 for p in report["latencyDistribution"] or []}
    tags.update(
        ok=ok, errors=sum(n for code, n in report["statusCodeDistribution"].items() if code != "OK"),
        error_kinds=report.get("errorDistribution") or {}, seconds=report["total"] / 1e9, rps=report["rps"],
        p50_ms=percentiles.get(50), p99_ms=percentiles.get(99), server_cpu_s=server1 - server0,
        redis_cpu_s=redis1 - redis0, rss_kb=peak[0], ghz_cpu_s=ghz_cpu())
    print(json.dumps(tags))
    return 0


def ghz_cpu() -> float:
    """ghz's user + system CPU: the rusage of this process' ended children, and ghz is the only one."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
