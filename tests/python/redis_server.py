"""Real redis-server (and PostgreSQL) processes for the tests, started by tests/servers/launch.py. The launcher is their parent: it
SIGKILLs them and removes their directories when its stdin closes, so they die with this process however it ends."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional

LAUNCHER = Path(__file__).resolve().parents[1] / "servers" / "launch.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(n: int) -> int:
    """The first of ``n`` consecutive free ports, below the ephemeral range (32768 and up on Linux), where a
    connection's local port could take one of them meanwhile (as the workers' Redis connections would)."""
    rng = random.Random()
    while True:
        first = rng.randrange(20000, 32000 - n)
        sockets = []
        try:
            for p in range(first, first + n):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", p))
            return first
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()


def wait_listening(port: int, process: "subprocess.Popen[bytes]", log: Path, what: str) -> None:
    """Returns once ``process`` accepts connections on ``port``; fails with its log if it exits first (or is still
    not listening after a minute: a bound for a broken server, not a wait)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{what} did not start:\n{log.read_text(errors='replace')}") from None
            time.sleep(0.05)


class TlsFiles(NamedTuple):
    """The CA of the servers' certificates, a client certificate and key it signed, and an unrelated CA that must
    fail to verify the servers."""
    ca: str
    cert: str
    key: str
    wrong_ca: str


class Launcher:
    """One launch.py process: `ready` is its first JSON line; send() writes a command and returns its reply."""

    def __init__(self, *flags: str) -> None:
        self.process = subprocess.Popen([sys.executable, str(LAUNCHER), *flags], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.ready = self._receive()
        if not self.ready["ok"]:
            self.close()
            raise RuntimeError(f"launch.py: {self.ready['error']}")

    def send(self, command: str) -> Dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        reply = self._receive()
        if not reply["ok"]:
            raise RuntimeError(f"launch.py {command}: {reply['error']}")
        return reply

    def _receive(self) -> Dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("launch.py exited (see its error above)")
        return json.loads(line)

    def close(self) -> None:
        """End of its stdin: it kills the servers and removes their directories, then exits."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait()
        self.process.stdout.close()


def launch_flags(tls: bool, tls_only: bool, unix: bool) -> List[str]:
    return ["--tls-only"] * tls_only + ["--tls"] * (tls and not tls_only) + ["--unix"] * unix


class RedisNode:
    """One redis-server: a RedisServer, or a node of a RedisCluster."""

    def __init__(self, launcher: Launcher, index: int) -> None:
        self._launcher = launcher
        self._index = index
        info = launcher.ready["nodes"][index]
        self.port: int = info["port"] or 0  # 0 when TLS only
        self.tls_port: int = info["tls_port"] or 0  # 0 without TLS
        self.unix_path: Optional[str] = info["unix"]
        self.dir: str = info["dir"]  # its working directory, removed with it
        self.pid: Optional[int] = info["pid"]  # None while killed
        self._urls = {kind: info[kind] for kind in ("url", "tls_url", "unix_url")}
        tls = launcher.ready["tls"]
        self.tls: Optional[TlsFiles] = TlsFiles(**tls) if tls else None

    def _url(self, kind: str) -> str:
        url = self._urls[kind]
        if url is None:
            raise AttributeError(f"this test server has no {kind}")
        return url

    @property
    def url(self) -> str:
        """redis://127.0.0.1:P"""
        return self._url("url")

    @property
    def tls_url(self) -> str:
        """rediss://127.0.0.1:TP?tls_ca=CA"""
        return self._url("tls_url")

    @property
    def unix_url(self) -> str:
        """redis+unix://PATH"""
        return self._url("unix_url")

    def _control(self, verb: str) -> None:
        self.pid = self._launcher.send(f"{verb} {self._index}")["pid"]

    def start(self) -> None:
        """After kill(): on the same port(s) and socket; returns once it answers PING."""
        self._control("start")

    def kill(self) -> None:
        """SIGKILL: the abrupt death of a server."""
        self._control("kill")

    def stop(self) -> None:
        """SIGSTOP: a server that hangs."""
        self._control("stop")

    def cont(self) -> None:
        """SIGCONT."""
        self._control("cont")

    def cli(self, *args: str) -> str:
        """redis-cli on the plain port (else the Unix socket); its output, stripped."""
        where = ["-h", "127.0.0.1", "-p", str(self.port)] if self.port else ["-s", str(self.unix_path)]
        result = subprocess.run(["redis-cli", *where, *args], capture_output=True, text=True, timeout=10,
                                env={**os.environ, "REDISCLI_AUTH": ""})
        return result.stdout.strip()


class RedisServer(RedisNode):
    """One server on free loopback ports in a fresh directory; `args` are extra redis-server arguments."""

    def __init__(self, *args: str, tls: bool = False, tls_only: bool = False, unix: bool = False) -> None:
        super().__init__(Launcher(*launch_flags(tls, tls_only, unix), *(["--", *args] if args else [])), 0)

    def close(self) -> None:
        self._launcher.close()

    def __enter__(self) -> "RedisServer":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class RedisCluster:
    """Masters joined by `redis-cli --cluster create`, every node agreeing on the slot map."""

    def __init__(self, masters: int = 3, tls: bool = False, tls_only: bool = False, unix: bool = False) -> None:
        self._launcher = Launcher(*launch_flags(tls, tls_only, unix), "--cluster", str(masters))
        self.nodes = [RedisNode(self._launcher, i) for i in range(masters)]
        self._urls = self._launcher.ready["cluster"]
        self.tls = self.nodes[0].tls

    @property
    def url(self) -> str:
        """redis+cluster://127.0.0.1:P1,127.0.0.1:P2,..."""
        if self._urls["url"] is None:
            raise AttributeError("this test cluster has no plain ports")
        return self._urls["url"]

    @property
    def tls_url(self) -> str:
        """rediss+cluster://127.0.0.1:TP1,...?tls_ca=CA"""
        if self._urls["tls_url"] is None:
            raise AttributeError("this test cluster has no TLS ports")
        return self._urls["tls_url"]

    def close(self) -> None:
        self._launcher.close()

    def __enter__(self) -> "RedisCluster":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class PostgresServer(RedisNode):
    """A throwaway PostgreSQL cluster (launch.py --postgres): a fresh copy of one initdb, a free loopback port. kill,
    start, stop and cont act on the postmaster and every backend."""

    def __init__(self) -> None:
        super().__init__(Launcher("--postgres"), 0)

    def close(self) -> None:
        self._launcher.close()

    def __enter__(self) -> "PostgresServer":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
