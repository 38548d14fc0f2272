"""Real redis-server processes for the tests: a free loopback port, a fresh directory, stopped by PID."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Optional


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="rw-redis-")
        self.process: Optional[subprocess.Popen[bytes]] = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Starts the server on its port (the same one after a kill) and waits until it answers PING."""
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed (scripts/setup.sh installs it)"
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while self.cli("PING") != "PONG":
            assert self.process.poll() is None, "redis-server exited at start"
            assert time.monotonic() < deadline, "redis-server did not answer PING within 10 s"
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL: the abrupt death of a server."""
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
            self.process = None

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def cli(self, *args: str) -> str:
        result = subprocess.run(
            ["redis-cli", "-h", "127.0.0.1", "-p", str(self.port), *args],
            capture_output=True, text=True, timeout=10, env={**os.environ, "REDISCLI_AUTH": ""},
        )
        return result.stdout.strip()
