"""The HTTP listener: /json as envoyproxy/ratelimit answers it, /healthcheck, /metrics (checked by promtool), and
requests it must refuse without harm."""

from __future__ import annotations

import json
import socket
import subprocess

from conftest import descriptor, fresh_window

EDGE = "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: minute, requests_per_unit: 2}\n"
REQUEST = json.dumps({"domain": "edge", "descriptors": [{"entries": [{"key": "remote_address", "value": "j"}]}]})


def test_json_answers_200_then_429_in_proto3_json(config_dir, start):
    fresh_window()
    server = start(config_dir({"edge.yaml": EDGE}))
    answers = [server.http("POST", "/json", REQUEST.encode()) for _ in range(3)]
    assert [a[0] for a in answers] == [200, 200, 429]
    assert answers[0][1] == "application/json"
    first, last = json.loads(answers[0][2]), json.loads(answers[2][2])
    assert first["overallCode"] == "OK" and last["overallCode"] == "OVER_LIMIT"
    status = first["statuses"][0]
    assert status["currentLimit"] == {"requestsPerUnit": 2, "unit": "MINUTE"}
    assert status["limitRemaining"] == 1 and status["durationUntilReset"].endswith("s")
    assert "limitRemaining" not in last["statuses"][0]  # 0: left out, as proto3 JSON does
    # The same counter over gRPC.
    assert server.call("edge", descriptor(("remote_address", "j"))).overall_code == 2
    # Field names in either form; bad JSON and unknown fields: 400.
    snake = '{"domain": "edge", "descriptors": [{"entries": [{"key": "remote_address", "value": "k"}]}], "hits_addend": 1}'
    assert server.http("POST", "/json", snake.encode())[0] == 200
    assert server.http("POST", "/json", b"{not json")[0] == 400
    assert server.http("POST", "/json", b'{"domain": "edge", "colour": 1}')[0] == 400
    status, _, body = server.http("POST", "/json", b'{"domain": "edge"}')
    assert status == 400 and "descriptor list must not be empty" in body


def test_healthcheck_and_metrics(config_dir, start):
    fresh_window()
    server = start(config_dir({"edge.yaml": EDGE}))
    assert server.http("GET", "/healthcheck")[:3:2] == (200, "OK")
    for _ in range(3):
        server.call("edge", descriptor(("remote_address", "m")))
    status, content_type, text = server.http("GET", "/metrics")
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
    assert 'ratewarden_decisions_total{limiter="edge.remote_address",outcome="allowed"} 2\n' in text
    assert 'ratewarden_decisions_total{limiter="edge.remote_address",outcome="denied"} 1\n' in text
    assert 'ratewarden_server_request_duration_seconds_count{outcome="over_limit"} 1\n' in text
    assert 'ratewarden_server_config_loads_total{result="success"} 1\n' in text
    check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert check.returncode == 0 and check.stdout + check.stderr == "", check.stdout + check.stderr
    assert server.http("GET", "/nothing")[0] == 404
    assert server.http("DELETE", "/metrics")[0] == 405


def test_healthcheck_fails_while_the_stores_circuit_is_open(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}),
                   "redis://127.0.0.1:1?timeout=100ms&connect_timeout=100ms&circuit_failures=1&circuit_backoff=60s")
    assert server.http("GET", "/healthcheck")[0] == 200
    status, _, body = server.http("POST", "/json", REQUEST.encode())
    assert status == 503 and "store" in body
    assert server.http("GET", "/healthcheck")[0] == 500


def raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_bad_http_is_refused_and_the_server_stays(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}), "memory://", "--max-message-bytes", "4096")
    assert raw(server.http_port, b"GET /healthcheck HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n").startswith(
        b"HTTP/1.1 431")
    assert raw(server.http_port, b"POST /json HTTP/1.1\r\nContent-Length: 5000\r\n\r\n").startswith(b"HTTP/1.1 413")
    assert raw(server.http_port, b"POST /json HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").startswith(
        b"HTTP/1.1 411")
    assert raw(server.http_port, b"hello\r\n\r\n").startswith(b"HTTP/1.1 400")
    # Two requests pipelined on one connection: two answers, in order.
    two = raw(server.http_port, b"GET /healthcheck HTTP/1.1\r\n\r\nGET /nothing HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert two.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 404" in two
    assert server.http("GET", "/healthcheck")[0] == 200
