"""A TCP proxy, in threads of the test process, with a gate: while the gate is shut it holds everything clients send
(the store calls) and keeps a copy, so a test can wait until given calls are all in flight at once, check what must
go on meanwhile, and then open the gate. It turns "calls overlap" into a condition, where a fixed delay made it a
race against the clock on a busy machine."""

from __future__ import annotations

import socket
import threading
from contextlib import contextmanager
from typing import Iterable, Iterator, List, Tuple


class GateProxy:
    def __init__(self, target_port: int, url: str) -> None:
        """``url``: where clients connect, with ``{port}`` for the proxy's port."""
        self._target = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.url = url.format(port=self.port)
        self._cond = threading.Condition()
        self._shut = False
        self._held = bytearray()  # everything sent since the gate was shut
        self._pairs: List[Tuple[socket.socket, socket.socket, bytearray]] = []  # client, upstream, not yet passed on
        threading.Thread(target=self._accept, daemon=True).start()

    @contextmanager
    def shut(self) -> Iterator[None]:
        """Shuts the gate for the with block, then opens it (passing on what it held), whatever the block raised."""
        with self._cond:
            self._shut = True
            self._held.clear()
        try:
            yield
        finally:
            self._open()

    def _open(self) -> None:
        with self._cond:
            self._shut = False
            for _, upstream, pending in self._pairs:
                try:
                    upstream.sendall(pending)
                except OSError:  # that client has gone
                    pass
                pending.clear()

    def wait_held(self, tokens: Iterable[bytes], timeout: float = 20) -> bool:
        """Waits until every token is in what the gate holds; False if that did not happen in timeout seconds."""
        wanted = list(tokens)
        with self._cond:
            return self._cond.wait_for(lambda: all(t in self._held for t in wanted), timeout)

    def close(self) -> None:
        self._listener.close()
        with self._cond:
            for pair in self._pairs:
                for sock in pair[:2]:
                    _hang_up(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            upstream = socket.create_connection(("127.0.0.1", self._target))
            pending = bytearray()
            with self._cond:
                self._pairs.append((client, upstream, pending))
            threading.Thread(target=self._forward, args=(client, upstream, pending), daemon=True).start()
            threading.Thread(target=self._back, args=(upstream, client), daemon=True).start()

    def _forward(self, client: socket.socket, upstream: socket.socket, pending: bytearray) -> None:
        try:
            while data := client.recv(65536):
                with self._cond:
                    if self._shut:
                        pending += data
                        self._held += data
                        self._cond.notify_all()
                    else:
                        upstream.sendall(data)
        except OSError:
            pass
        finally:
            _hang_up(upstream)

    @staticmethod
    def _back(upstream: socket.socket, client: socket.socket) -> None:
        try:
            while data := upstream.recv(65536):
                client.sendall(data)
        except OSError:
            pass
        finally:
            _hang_up(client)


def _hang_up(sock: socket.socket) -> None:
    # shutdown() first: it wakes a thread blocked in recv() on the socket, which close() alone does not.
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
