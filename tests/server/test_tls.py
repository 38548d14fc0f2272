"""Who may call the server: TLS on the gRPC and HTTP listeners, mutual TLS (a client certificate from the client CA,
no other), certificates renewed on disk served without a restart, handshakes that stall or fail, /metrics and
/healthcheck on a plaintext listener of their own. Certificates: tests/servers/launch.py's, made at test time (the
`certificates` fixture)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path
from typing import Dict, Optional

import grpc
import pytest
from conftest import descriptor, rls_pb2, rls_pb2_grpc

EDGE = "domain: edge\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 100}\n"
REQUEST = json.dumps({"domain": "edge", "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}).encode()
OK = rls_pb2.RateLimitResponse.OK


def tls_flags(certs: Dict[str, str], mutual: bool = False) -> list:
    flags = ["--tls-cert", certs["server_cert"], "--tls-key", certs["server_key"]]
    return flags + ["--tls-client-ca", certs["ca"]] if mutual else flags


def grpc_credentials(certs: Dict[str, str], cert: Optional[str] = None, key: Optional[str] = None):
    read = lambda path: Path(path).read_bytes() if path else None  # noqa: E731
    return grpc.ssl_channel_credentials(read(certs["ca"]), read(key), read(cert))


def client_context(certs: Dict[str, str], cert: Optional[str] = None, key: Optional[str] = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=certs["ca"])
    if cert:
        context.load_cert_chain(cert, key)
    return context


def refused_over_grpc(server, credentials=None) -> grpc.RpcError:
    target = f"127.0.0.1:{server.port}"
    with (grpc.secure_channel(target, credentials) if credentials else grpc.insecure_channel(target)) as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        with pytest.raises(grpc.RpcError) as error:
            stub.ShouldRateLimit(rls_pb2.RateLimitRequest(domain="edge", descriptors=[descriptor(("k", "v"))]),
                                 timeout=10)
    return error.value


def refused_over_https(server, context: ssl.SSLContext) -> None:
    """The HTTP listener refuses this client: the handshake fails, or the connection ends before an answer."""
    connection = http.client.HTTPSConnection("127.0.0.1", server.http_port, timeout=10, context=context)
    try:
        with pytest.raises((ssl.SSLError, ConnectionError, http.client.RemoteDisconnected)):
            connection.request("POST", "/json", body=REQUEST)
            connection.getresponse()
    finally:
        connection.close()


def test_tls_answers_on_both_listeners_and_plaintext_is_refused(config_dir, start, certificates):
    server = start(config_dir({"edge.yaml": EDGE}), "memory://", *tls_flags(certificates),
                   credentials=grpc_credentials(certificates), https=client_context(certificates))
    assert server.call("edge", descriptor(("k", "v"))).overall_code == OK
    status, _, body = server.http("POST", "/json", REQUEST)
    assert status == 200 and json.loads(body)["overallCode"] == "OK"
    assert server.http("GET", "/healthcheck")[::2] == (200, "OK")
    # Plaintext clients: gRPC without TLS, HTTP without TLS.
    assert refused_over_grpc(server).code() == grpc.StatusCode.UNAVAILABLE
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected)):
        server.http("GET", "/healthcheck", port=server.http_port)
    # A client that does not trust the server's CA refuses it.
    assert refused_over_grpc(server, grpc.ssl_channel_credentials(
        Path(certificates["wrong_ca"]).read_bytes())).code() == grpc.StatusCode.UNAVAILABLE
    assert server.http("GET", "/healthcheck")[0] == 200  # and the server still serves


def test_mutual_tls_admits_only_certificates_of_the_client_ca(config_dir, start, certificates):
    c = certificates
    server = start(config_dir({"edge.yaml": EDGE}), "memory://", *tls_flags(c, mutual=True),
                   credentials=grpc_credentials(c, c["cert"], c["key"]), https=client_context(c, c["cert"], c["key"]))
    assert server.call("edge", descriptor(("k", "v"))).overall_code == OK
    assert server.http("POST", "/json", REQUEST)[0] == 200
    for cert, key in ((None, None), (c["stranger_cert"], c["stranger_key"]), (c["wrong_ca"], None)):
        if cert == c["wrong_ca"]:  # a self-signed certificate: the other CA's own
            key = str(Path(c["wrong_ca"]).with_suffix(".key"))
        assert refused_over_grpc(server, grpc_credentials(c, cert, key)).code() == grpc.StatusCode.UNAVAILABLE, cert
        refused_over_https(server, client_context(c, cert, key))
    assert server.call("edge", descriptor(("k", "v"))).overall_code == OK
    assert server.http("GET", "/healthcheck")[0] == 200


def served_serial(port: int, context: ssl.SSLContext, alpn: str) -> str:
    context.set_alpn_protocols([alpn])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            return tls.getpeercert()["serialNumber"]


def renew(directory: Path) -> None:
    """A new server certificate from the same CA and key (a new serial), renamed into place as renewal tools do."""
    subprocess.run(["openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                    "-CAcreateserial", "-days", "2", "-extfile", "server.ext", "-out", "server.crt.new"],
                   cwd=directory, check=True, capture_output=True)
    os.replace(directory / "server.crt.new", directory / "server.crt")


def wait_until(condition, what: str, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def copy_of(certificates: Dict[str, str], tmp_path_factory) -> Dict[str, str]:
    directory = tmp_path_factory.mktemp("tls") / "certs"  # not in the config directory, which is read recursively
    shutil.copytree(Path(certificates["ca"]).parent, directory)
    return {name: str(directory / Path(path).name) for name, path in certificates.items()}


def test_a_renewed_certificate_is_served_after_sighup_and_a_bad_one_is_not(config_dir, start, certificates,
                                                                           tmp_path_factory):
    c = copy_of(certificates, tmp_path_factory)
    context = client_context(c, c["cert"], c["key"])
    server = start(config_dir({"edge.yaml": EDGE}), "memory://", *tls_flags(c, mutual=True), "--tls-refresh-s", "3600",
                   https=context)
    first = served_serial(server.http_port, context, "http/1.1")
    renew(Path(c["server_cert"]).parent)
    os.kill(server.process.pid, signal.SIGHUP)
    wait_until(lambda: served_serial(server.http_port, context, "http/1.1") != first, "SIGHUP did not reload TLS")
    wait_until(lambda: "TLS files reloaded (SIGHUP)" in server.log.read_text(), "logged once it is in force")
    # A key that is not the certificate's (a renewal half written): logged, counted, the previous files stay.
    renewed = served_serial(server.http_port, context, "http/1.1")
    shutil.copy(c["key"], c["server_key"])
    os.kill(server.process.pid, signal.SIGHUP)
    wait_until(lambda: "TLS files not reloaded (SIGHUP)" in server.log.read_text(), server.log.read_text())
    assert "is not the key of the certificate" in server.log.read_text()
    assert served_serial(server.http_port, context, "http/1.1") == renewed
    assert server.http("POST", "/json", REQUEST)[0] == 200
    metrics = server.http("GET", "/metrics")[2]
    assert 'ratewarden_server_tls_loads_total{result="success"} 2\n' in metrics
    assert 'ratewarden_server_tls_loads_total{result="error"} 1\n' in metrics


def test_a_renewed_certificate_is_served_by_both_listeners_within_the_refresh(config_dir, start, certificates,
                                                                              tmp_path_factory):
    c = copy_of(certificates, tmp_path_factory)
    context = client_context(c, c["cert"], c["key"])
    server = start(config_dir({"edge.yaml": EDGE}), "memory://", *tls_flags(c, mutual=True), "--tls-refresh-s", "1",
                   credentials=grpc_credentials(c, c["cert"], c["key"]), https=context)
    before = {served_serial(server.port, context, "h2"), served_serial(server.http_port, context, "http/1.1")}
    assert len(before) == 1
    renew(Path(c["server_cert"]).parent)
    wait_until(lambda: served_serial(server.http_port, context, "http/1.1") not in before, "HTTP kept the old one")
    wait_until(lambda: served_serial(server.port, context, "h2") not in before, "gRPC kept the old one")
    assert server.call("edge", descriptor(("k", "v"))).overall_code == OK  # the channel reconnects as it needs
    assert server.http("POST", "/json", REQUEST)[0] == 200


def test_metrics_and_healthcheck_on_a_plaintext_listener_of_their_own(config_dir, start, certificates):
    c = certificates
    server = start(config_dir({"edge.yaml": EDGE}), "memory://", *tls_flags(c, mutual=True), "--metrics-listen",
                   "127.0.0.1:0", credentials=grpc_credentials(c, c["cert"], c["key"]),
                   https=client_context(c, c["cert"], c["key"]))
    assert server.metrics_port not in (0, server.http_port)
    server.call("edge", descriptor(("k", "v")))
    status, content_type, text = server.http("GET", "/metrics", port=server.metrics_port)
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
    assert 'ratewarden_decisions_total{limiter="edge.k",outcome="allowed"} 1\n' in text
    assert server.http("GET", "/healthcheck", port=server.metrics_port)[::2] == (200, "OK")
    assert server.http("POST", "/json", port=server.metrics_port)[0] == 405  # no /json there (nor any body)
    # The main listener keeps /json and /healthcheck; /metrics has moved.
    assert server.http("GET", "/healthcheck")[::2] == (200, "OK")
    assert server.http("GET", "/metrics")[0] == 404


def wait_closed(s: socket.socket) -> None:
    """Until the server closes the connection (an alert it sends first is read and dropped); fails on the timeout."""
    try:
        while s.recv(1024):
            pass
    except ConnectionResetError:
        pass


def test_a_stalled_handshake_neither_blocks_others_nor_stays(config_dir, start, certificates):
    c = certificates
    server = start(config_dir({"edge.yaml": EDGE}), "memory://", *tls_flags(c, mutual=True),
                   https=client_context(c, c["cert"], c["key"]))
    began = time.monotonic()  # before the server accepts them: its timeout ends 10 s after this, or later
    stalled = [socket.create_connection(("127.0.0.1", server.http_port), timeout=30) for _ in range(3)]
    stalled[1].sendall(b"\x16\x03\x01\x02\x00\x01")  # the start of a ClientHello, never finished
    stalled[2].sendall(b"GET /healthcheck HTTP/1.1\r\n\r\n")  # plaintext: refused at once
    try:
        wait_closed(stalled[2])
        assert server.http("POST", "/json", REQUEST)[0] == 200  # the loop serves others meanwhile
        assert time.monotonic() - began < 10  # before the stalled ones were let go
        for s in stalled[:2]:  # closed once the handshake timeout (10 s) has passed
            wait_closed(s)
        assert 10 <= time.monotonic() - began < 30
    finally:
        for s in stalled:
            s.close()


def test_bad_tls_files_or_flags_refuse_to_start(config_dir, certificates, tmp_path_factory):
    from conftest import BINARY
    config = config_dir({"edge.yaml": EDGE})
    c = copy_of(certificates, tmp_path_factory)
    Path(c["server_key"]).write_text(Path(c["key"]).read_text())  # another certificate's key
    cases = [(tls_flags(c), f"--tls-key {c['server_key']} is not the key of the certificate in --tls-cert"),
             (["--tls-cert", c["server_cert"]], "--tls-cert and --tls-key go together"),
             (["--tls-cert", c["ca"] + ".gone", "--tls-key", c["key"]], f"--tls-cert {c['ca']}.gone: No such file"),
             (["--tls-cert", c["cert"], "--tls-key", c["key"], "--tls-client-ca", c["key"]],
              f"--tls-client-ca {c['key']}: no PEM certificate in it")]
    for flags, message in cases:
        result = subprocess.run([str(BINARY), "--config", str(config), "--grpc-listen", "127.0.0.1:0", "--http-listen",
                                 "127.0.0.1:0", *flags], capture_output=True, text=True, timeout=30)
        assert result.returncode == 2 and message in result.stderr, (flags, result.stderr)
