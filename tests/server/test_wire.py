"""The wire itself: requests encoded by hand, byte by byte from Envoy's field numbers, so that a mistake in our
.proto files cannot hide behind stubs generated from them; the standard gRPC health service; SIGHUP reloads."""

from __future__ import annotations

import os
import signal
import time

import grpc
from conftest import descriptor, field, fields, fresh_window, rls_pb2, varint


EDGE = "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: minute, requests_per_unit: 1}\n"


def test_a_hand_encoded_request_gets_envoys_fields_back(config_dir, start):
    fresh_window()
    server = start(config_dir({"edge.yaml": EDGE}))
    call = server.channel.unary_unary("/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit")
    # RateLimitRequest{domain=1, descriptors=2 [RateLimitDescriptor{entries=1 [Entry{key=1, value=2}]}], hits_addend=3}
    entry = field(1, b"remote_address") + field(2, b"10.1.1.1")
    request = field(1, b"edge") + field(2, field(1, entry)) + varint(3 << 3) + varint(1)
    answers = [fields(call(request, timeout=10)) for _ in range(2)]
    for answer, code in zip(answers, (1, 2)):  # OK, then OVER_LIMIT
        top = dict((n, v) for n, v in answer if n != 2 and n != 3)
        assert top[1] == code  # overall_code
        status = dict(fields([v for n, v in answer if n == 2][0]))  # statuses[0]: DescriptorStatus
        assert status[1] == code
        limit = dict(fields(status[2]))  # current_limit: RateLimit{requests_per_unit=1, unit=2}
        assert (limit[1], limit[2]) == (1, 2)  # 1 per MINUTE
        assert dict(fields(status[4]))[1] > 0  # duration_until_reset.seconds
        headers = [dict(fields(v)) for n, v in answer if n == 3]  # response_headers_to_add: HeaderValue{key=1, value=2}
        assert {h[1] for h in headers} == {b"RateLimit-Limit", b"RateLimit-Remaining", b"RateLimit-Reset"}


def test_the_grpc_health_service_says_serving(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}))
    check = server.channel.unary_unary("/grpc.health.v1.Health/Check")
    for service in (b"", b"ratelimit", b"envoy.service.ratelimit.v3.RateLimitService"):
        assert fields(check(field(1, service) if service else b"", timeout=10)) == [(1, 1)]  # SERVING


def test_sighup_reloads_and_a_bad_config_keeps_the_old_one(config_dir, start):
    config = config_dir({"edge.yaml": EDGE})
    server = start(config)
    ask = lambda: server.call("edge", descriptor(("remote_address", "r"), hits=0)).statuses[0]  # noqa: E731
    assert ask().current_limit.requests_per_unit == 1
    (config / "edge.yaml").write_text(EDGE.replace("requests_per_unit: 1", "requests_per_unit: 7"))
    os.kill(server.process.pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    while ask().current_limit.requests_per_unit != 7:
        assert time.monotonic() < deadline, "SIGHUP did not reload"
        time.sleep(0.02)
    (config / "edge.yaml").write_text(EDGE.replace("unit: minute", "unit: fortnight"))
    os.kill(server.process.pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    while "config not reloaded" not in server.log.read_text():
        assert time.monotonic() < deadline, server.log.read_text()
        time.sleep(0.02)
    assert "edge.yaml:4: invalid rate limit unit 'FORTNIGHT'" in server.log.read_text()
    assert ask().current_limit.requests_per_unit == 7


def test_sigterm_drains_and_exits(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}))
    assert server.call("edge", descriptor(("remote_address", "t"))).overall_code == rls_pb2.RateLimitResponse.OK
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=10) == 0
    assert "draining" in server.log.read_text()


def test_a_bad_config_refuses_to_start_naming_file_and_line(config_dir, tmp_path):
    import subprocess
    from conftest import BINARY
    config = config_dir({"a.yaml": EDGE, "b.yaml": "domain: b\ndescriptors:\n  - key: k\n    colour: red\n",
                         ".hidden.yaml": "not: [valid", "c.yaml": EDGE.replace("edge", "other")})
    result = subprocess.run([str(BINARY), "--config", str(config), "--grpc-listen", "127.0.0.1:0"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert f"{config}/b.yaml:4: config error, unknown key 'colour'" in result.stderr
    (config / "b.yaml").unlink()
    (config / "c.yaml").write_text(EDGE)
    result = subprocess.run([str(BINARY), "--config", str(config), "--grpc-listen", "127.0.0.1:0"],
                            capture_output=True, text=True, timeout=30)
    assert "duplicate domain 'edge' in config file" in result.stderr
