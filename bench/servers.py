#!/usr/bin/env python3
"""The benchmarks' servers, started as the tests' are: by tests/servers/launch.py, through the Python tests' helper
(tests/python/redis_server.py). The launcher is their parent and kills them when its stdin closes, so they never
outlive the benchmark, however it ends (Ctrl-C, a crash, SIGKILL).

As a module (the Python benchmarks): RedisServer, RedisCluster and PostgresServer are the tests' classes (context
managers; .url, .port, .pid); raise_priority(pid) renices a server.

As a command (the shell benchmarks):

    python3 bench/servers.py [--nice] [--] COMMAND ARGS...

runs COMMAND with every {redis}, {redis_port}, {cluster} and {postgres} in its ARGS replaced by the URL (the port) of
a server started for it: a redis-server, a Redis Cluster of 3 masters, a PostgreSQL. It exits with COMMAND's status;
the servers go when COMMAND ends. --nice: the redis-server processes at a higher CPU priority (nice -10) when allowed,
standing in for a Redis host of their own: on 2 shared cores their wake-up latency would otherwise measure the
scheduler, for every limiter alike. Standard library only.
"""
from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Dict, List, Optional

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests" / "python"))
from redis_server import PostgresServer, RedisCluster, RedisServer, free_ports, wait_listening  # noqa: E402

__all__ = ["PostgresServer", "RedisCluster", "RedisServer", "free_ports", "raise_priority", "wait_listening"]

PLACEHOLDER = re.compile(r"\{(redis|redis_port|cluster|postgres)\}")
PR_SET_PDEATHSIG = 1
LIBC = ctypes.CDLL(None)  # loaded here: a child between fork and exec should not dlopen


def raise_priority(pid: Optional[int]) -> None:
    """nice -10 for every thread of process `pid` (as `nice -n -10 redis-server` would give them), when allowed;
    otherwise it runs as it is."""
    if pid is None:
        return
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(task), -10)
        except PermissionError:
            return
        except ProcessLookupError:  # a thread that has just ended
            pass


def run(argv: List[str], nice: bool) -> int:
    wanted = {name for arg in argv for name in PLACEHOLDER.findall(arg)}
    with ExitStack() as servers:
        values: Dict[str, str] = {}
        pids: List[Optional[int]] = []
        if wanted & {"redis", "redis_port"}:
            redis = servers.enter_context(RedisServer())
            values.update(redis=redis.url, redis_port=str(redis.port))
            pids.append(redis.pid)
        if "cluster" in wanted:
            cluster = servers.enter_context(RedisCluster(3))
            values["cluster"] = cluster.url
            pids += [node.pid for node in cluster.nodes]
        if "postgres" in wanted:
            values["postgres"] = servers.enter_context(PostgresServer()).url
        if nice:
            for pid in pids:
                raise_priority(pid)
        for name in ("redis", "cluster", "postgres"):
            if name in values:
                print(f"servers.py: {name} at {values[name]}", file=sys.stderr)
        # SIGTERM to COMMAND if this process dies (its servers die with it).
        child = subprocess.Popen([PLACEHOLDER.sub(lambda m: values[m.group(1)], arg) for arg in argv],
                                 preexec_fn=lambda: LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM))
        try:
            return child.wait()
        finally:  # interrupted (Ctrl-C, SIGTERM): COMMAND goes before its servers
            if child.poll() is None:
                child.terminate()
                child.wait()


def main() -> int:
    argv = sys.argv[1:]
    nice = argv[:1] == ["--nice"]
    argv = argv[nice:]
    argv = argv[argv[:1] == ["--"]:]
    if not argv:
        print(__doc__.split("As a command (the shell benchmarks):")[1].split("\n\n")[1], file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwinds: COMMAND, then the servers
    try:
        return run(argv, nice)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
