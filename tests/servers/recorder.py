"""A recording HTTP server on 127.0.0.1: the partner API that paced callers call (tests/polyglot/test_pacing_fleet.py,
bench/pacing/). It answers every request at once (200, keep-alive) and records when the request arrived and its
path, so that a test can tell what rate the callers achieved together, as the called service saw it.

    with Recorder() as recorder:
        ... callers send GET recorder.url + "/anything" ...
        times = recorder.arrivals()          # seconds (time.monotonic), in arrival order (but GET /warmup/...)

worst_window(times) is the most arrivals in any 1-s window. Standard library only (asyncio in a thread of its own).
"""
from __future__ import annotations

import asyncio
import threading
import time
from typing import List, Optional, Sequence, Tuple

HOST = "127.0.0.1"
REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


class Recorder:
    def __init__(self) -> None:
        self._arrivals: List[Tuple[float, str]] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._server: Optional[asyncio.AbstractServer] = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="recorder", daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def __enter__(self) -> "Recorder":
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, HOST, 0, backlog=1024), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def clear(self) -> None:
        with self._lock:
            self._arrivals.clear()

    def arrivals(self, skip: Optional[str] = "/warmup/") -> List[float]:
        """Arrival times (time.monotonic) of the requests, in order, but those whose path starts with `skip` (the
        callers' warm-up requests, by default)."""
        with self._lock:
            return [t for t, path in self._arrivals if skip is None or not path.startswith(skip)]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    break
                now = time.monotonic()  # the request's first line is its arrival
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # headers: requests here carry no body
                parts = request_line.split()
                with self._lock:
                    self._arrivals.append((now, parts[1].decode("latin1") if len(parts) > 1 else "?"))
                writer.write(REPLY)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


def worst_window(times: Sequence[float], width: float = 1.0) -> int:
    """The most arrivals in any half-open window [t, t + width): a maximal window starts at an arrival."""
    ordered = sorted(times)
    worst, first = 0, 0
    for last, t in enumerate(ordered):
        while ordered[first] <= t - width:
            first += 1
        worst = max(worst, last - first + 1)
    return worst
