#!/usr/bin/env python3
"""What `WAIT 1` after each decision would cost (docs/deployment.md, "Redis Sentinel"): a master and its replica
from tests/servers/launch.py --sentinel, one connection, a small script (INCR + PEXPIRE, a fixed window's writes) with
and without `WAIT 1 1000` after it, in blocks that alternate, in one run:

    python3 bench/sentinel_wait_cost.py

- one call at a time (a caller's round trip): p50 and p99 per decision;
- pipelined, 100 decisions per write (what concurrent callers on one connection get): decisions per second.
Standard library only.
"""
from __future__ import annotations

import socket
import sys
import time
from pathlib import Path
from typing import Any, List

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests" / "python"))
from redis_server import Launcher  # noqa: E402

SCRIPT = "local n = redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], 60000) return n"


def command(*args: Any) -> bytes:
    parts = [str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


class Connection:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")

    def read(self) -> Any:
        line = self.reader.readline()
        kind, body = line[:1], line[1:-2]
        if kind == b"-":
            raise RuntimeError(body.decode())
        if kind == b"$":
            n = int(body)
            return None if n < 0 else self.reader.read(n + 2)[:-2]
        if kind == b"*":
            return [self.read() for _ in range(int(body))]
        return int(body) if kind == b":" else body


def main() -> int:
    launcher = Launcher("--sentinel")
    try:
        c = Connection(launcher.ready["nodes"][launcher.ready["sentinel"]["master"]]["port"])
        c.sock.sendall(command("SCRIPT", "LOAD", SCRIPT))
        sha = c.read().decode()
        decide, wait = command("EVALSHA", sha, 1, "k"), command("WAIT", 1, 1000)

        def one_at_a_time(n: int, with_wait: bool) -> List[float]:
            times = []
            for _ in range(n):
                start = time.perf_counter()
                c.sock.sendall(decide + (wait if with_wait else b""))
                c.read()
                if with_wait and c.read() != 1:
                    raise RuntimeError("WAIT: the replica did not acknowledge within 1 s")
                times.append(time.perf_counter() - start)
            return times

        def pipelined(batches: int, with_wait: bool) -> float:
            batch = (decide + (wait if with_wait else b"")) * 100
            start = time.perf_counter()
            for _ in range(batches):
                c.sock.sendall(batch)
                for _ in range(200 if with_wait else 100):
                    c.read()
            return batches * 100 / (time.perf_counter() - start)

        alone: List[float] = []
        waited: List[float] = []
        rates = {False: [], True: []}  # type: ignore[var-annotated]
        for _ in range(20):
            alone += one_at_a_time(500, False)
            waited += one_at_a_time(500, True)
            rates[False].append(pipelined(5, False))
            rates[True].append(pipelined(5, True))

        def q(xs: List[float], f: float) -> float:
            return sorted(xs)[int(len(xs) * f)] * 1e6

        def median(xs: List[float]) -> float:
            return sorted(xs)[len(xs) // 2]

        print("| | without WAIT | with WAIT 1 | ratio |")
        print("|---|---|---|---|")
        print(f"| one at a time, p50 | {q(alone, .5):.0f} µs | {q(waited, .5):.0f} µs | "
              f"{q(waited, .5) / q(alone, .5):.2f} |")
        print(f"| one at a time, p99 | {q(alone, .99):.0f} µs | {q(waited, .99):.0f} µs | "
              f"{q(waited, .99) / q(alone, .99):.2f} |")
        print(f"| pipelined (100 a write), decisions/s, median | {median(rates[False]):.0f} | "
              f"{median(rates[True]):.0f} | {median(rates[True]) / median(rates[False]):.2f} |")
    finally:
        launcher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
