"""ratewarden-server over the wire, as a proxy calls it: the binary started on a free port with a config directory
and a store URL; Python stubs generated from our .proto files by grpcio-tools at test time."""

from __future__ import annotations

import http.client
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import grpc
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.insert(0, str(ROOT / "tests" / "servers"))
from redis_server import RedisCluster, RedisServer  # noqa: E402
from launch import make_certificates  # noqa: E402

BINARY = Path(os.environ.get("RATEWARDEN_SERVER", ROOT / "build-test" / "server" / "ratewarden-server"))
PROTO = ROOT / "server" / "proto"


def _generate_stubs() -> Path:
    out = Path(tempfile.mkdtemp(prefix="rw-rls-stubs-"))
    from grpc_tools import protoc  # type: ignore[import-untyped]
    import grpc_tools
    includes = Path(grpc_tools.__file__).parent / "_proto"  # google/protobuf/*.proto
    protos = [str(p.relative_to(PROTO)) for p in PROTO.rglob("*.proto")]
    code = protoc.main(["protoc", f"-I{PROTO}", f"-I{includes}", f"--python_out={out}", f"--grpc_python_out={out}",
                        *protos])
    assert code == 0, "grpc_tools.protoc failed on server/proto"
    sys.path.insert(0, str(out))
    return out


_generate_stubs()
from envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc  # noqa: E402
from envoy.extensions.common.ratelimit.v3 import ratelimit_pb2  # noqa: E402


# The server never outlives the test process: setpriv (util-linux) sets its parent-death signal. Not a preexec_fn:
# that makes Python fork instead of spawn, and grpcio's fork handlers then run in the child (this process uses gRPC),
# which can abort it before the exec (seen as "Epoll1Poller encountered epoll_wait error", exit -6).
DIE_WITH_PARENT = ["setpriv", "--pdeathsig", "KILL", "--"]


class Server:
    """One ratewarden-server process on 127.0.0.1 (gRPC on a free port), killed when the test ends. With TLS flags,
    `credentials` are the gRPC channel's and `https` the HTTP listener's client context."""

    def __init__(self, config: Path, store: str, *flags: str, credentials: Optional[grpc.ChannelCredentials] = None,
                 https: Optional[ssl.SSLContext] = None) -> None:
        self.config = config
        self.log = Path(tempfile.mkstemp(prefix="rw-server-", suffix=".log")[1])
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [*DIE_WITH_PARENT, str(BINARY), "--config", str(config), "--store", store, "--grpc-listen",
                 "127.0.0.1:0", "--http-listen", "127.0.0.1:0", *flags], stdout=subprocess.PIPE, stderr=log)
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode()  # its first line says where it listens, once it does
        if not line.startswith("ratewarden-server: gRPC on 127.0.0.1:"):
            self.process.kill()
            code = self.process.wait()
            raise AssertionError(f"the server did not start (exit {code}): {line!r}\n{self.log.read_text()}")
        self.port = int(line.split("gRPC on 127.0.0.1:")[1].split(",")[0])
        self.http_port = int(line.split("HTTP on 127.0.0.1:")[1].split(",")[0])
        self.metrics_port = int(line.split("metrics on 127.0.0.1:")[1].split(",")[0]) if "metrics on" in line else 0
        self.https = https
        target = f"127.0.0.1:{self.port}"
        self.channel = grpc.secure_channel(target, credentials) if credentials else grpc.insecure_channel(target)
        self.stub = rls_pb2_grpc.RateLimitServiceStub(self.channel)

    def call(self, domain: str, *descriptors: object, hits: int = 0, timeout: float = 10) -> rls_pb2.RateLimitResponse:
        return self.stub.ShouldRateLimit(rls_pb2.RateLimitRequest(domain=domain, descriptors=descriptors,
                                                                  hits_addend=hits), timeout=timeout)

    def http(self, method: str, path: str, body: Optional[bytes] = None, port: int = 0) -> Tuple[int, str, str]:
        """(status, content type, body) of one request over a fresh connection to the HTTP listener (over TLS with
        `https`), or to `port` in plaintext (the metrics listener)."""
        if port == 0 and self.https is not None:
            connection: http.client.HTTPConnection = http.client.HTTPSConnection(
                "127.0.0.1", self.http_port, timeout=10, context=self.https)
        else:
            connection = http.client.HTTPConnection("127.0.0.1", port or self.http_port, timeout=10)
        try:
            connection.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
            response = connection.getresponse()
            return response.status, response.getheader("Content-Type", ""), response.read().decode()
        finally:
            connection.close()

    def stop(self) -> None:
        self.channel.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.log.unlink(missing_ok=True)


def fresh_window(unit_s: int = 60, at_least_s: int = 5) -> None:
    """Waits until the current epoch window of `unit_s` has `at_least_s` left: a test that counts in the peer's
    epoch-aligned windows must not see one end under it."""
    while unit_s - int(time.time()) % unit_s < at_least_s:
        time.sleep(0.1)


def descriptor(*entries: tuple, hits: Optional[int] = None, limit: Optional[tuple] = None) -> object:
    d = ratelimit_pb2.RateLimitDescriptor(
        entries=[ratelimit_pb2.RateLimitDescriptor.Entry(key=k, value=v) for k, v in entries])
    if hits is not None:
        d.hits_addend.value = hits
    if limit is not None:
        d.limit.requests_per_unit, d.limit.unit = limit
    return d


# Protobuf's wire format by hand (Envoy's field numbers): what generated stubs refuse to build, and a check on our
# .proto files that does not go through them.
def field(number: int, payload: bytes) -> bytes:  # a length-delimited field (wire type 2)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def varint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def fields(message: bytes) -> list:
    """(number, value) pairs: an int for varints, bytes for length-delimited fields."""
    out, i = [], 0
    while i < len(message):
        key, i = read_varint(message, i)
        if key & 7 == 0:
            value, i = read_varint(message, i)
        else:
            length, i = read_varint(message, i)
            value, i = message[i:i + length], i + length
        out.append((key >> 3, value))
    return out


def read_varint(data: bytes, i: int):
    n = shift = 0
    while True:
        n |= (data[i] & 0x7F) << shift
        shift += 7
        i += 1
        if not data[i - 1] & 0x80:
            return n, i


@pytest.fixture
def config_dir(tmp_path: Path):
    """Writes config files: write({"edge.yaml": "..."}) (dedented)."""
    def write(files: Dict[str, str]) -> Path:
        for name, text in files.items():
            (tmp_path / name).write_text(textwrap.dedent(text))
        return tmp_path
    return write


@pytest.fixture
def start() -> Iterator:
    servers: List[Server] = []

    def start_server(config: Path, store: str = "memory://", *flags: str, **tls: object) -> Server:
        servers.append(Server(config, store, *flags, **tls))  # type: ignore[arg-type]
        return servers[-1]
    yield start_server
    for s in servers:
        s.stop()


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    """tests/servers/launch.py's throwaway CA, server certificate (localhost, 127.0.0.1) and client certificate,
    an unrelated CA (wrong_ca), and a client certificate that CA signed (stranger_cert, stranger_key). Read-only:
    a test that renews one copies the directory first."""
    files = make_certificates(tmp_path_factory.mktemp("tls") / "certs")
    directory = Path(files["ca"]).parent
    subprocess.run(["openssl", "x509", "-req", "-in", "client.csr", "-CA", "wrong-ca.crt", "-CAkey", "wrong-ca.key",
                    "-CAcreateserial", "-days", "2", "-extfile", "client.ext", "-out", "stranger.crt"],
                   cwd=directory, check=True, capture_output=True)
    return {**files, "stranger_cert": str(directory / "stranger.crt"), "stranger_key": files["key"]}


@pytest.fixture(scope="session")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def cluster() -> Iterator[RedisCluster]:
    """Three masters, every node agreeing on the slot map."""
    with RedisCluster(3) as server:
        yield server


def wait_for(condition, what: str, timeout: float = 30.0, every: float = 0.01):
    """Polls `condition` until it returns something true (which is returned); fails naming `what` after `timeout`
    seconds: a bound for a broken server, not a wait for time to pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(every)


def drain_cleanly(server: Server) -> None:
    """SIGTERM: the server drains and exits 0 with no sanitizer report in its log (LeakSanitizer's included, when
    RATEWARDEN_SERVER is the build-asan binary: it reports at exit)."""
    server.channel.close()
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=60) == 0, server.log.read_text()[-5000:]
    log = server.log.read_text()
    for report in ("LeakSanitizer", "AddressSanitizer", "runtime error:"):
        assert report not in log, log[-5000:]
