"""Hot reload that fires: an edited file, a file renamed into place and Kubernetes' ConfigMap symlink swap each take
effect within a second; counters survive for rules that did not change; calls in flight through a reload answer."""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
import time

from conftest import descriptor, drain_cleanly, rls_pb2, wait_for

RULE = "domain: edge\ndescriptors:\n  - key: a\n    rate_limit: {{unit: hour, requests_per_unit: {n}}}\n" \
       "  - key: b\n    rate_limit: {{unit: hour, requests_per_unit: 100}}\n"


def limit_of(server, key: str = "a") -> int:
    return server.call("edge", descriptor((key, "x"), hits=0)).statuses[0].current_limit.requests_per_unit


def wait_for_limit(server, n: int) -> float:
    """Seconds until the server answers with limit n (fails after 1 s: the target)."""
    began = time.monotonic()
    while limit_of(server) != n:
        assert time.monotonic() - began < 1.0, f"the new limit {n} did not take effect within 1 s"
        time.sleep(0.01)
    return time.monotonic() - began


def test_an_edit_and_a_rename_into_place_reload(config_dir, start):
    config = config_dir({"edge.yaml": RULE.format(n=1)})
    server = start(config)
    for _ in range(3):
        server.call("edge", descriptor(("b", "x")))
    (config / "edge.yaml").write_text(RULE.format(n=2))  # edited in place
    wait_for_limit(server, 2)
    tmp = config / ".edge.yaml.tmp"  # an editor's way: write aside (a dot file: never loaded), rename over
    tmp.write_text(RULE.format(n=3))
    os.replace(tmp, config / "edge.yaml")
    wait_for_limit(server, 3)
    # The unchanged rule kept its count: 3 used of 100.
    assert server.call("edge", descriptor(("b", "x"), hits=0)).statuses[0].limit_remaining == 97
    assert "config reloaded (the directory changed)" in server.log.read_text()


def test_a_configmap_symlink_swap_reloads(tmp_path, start):
    # What the kubelet writes: files are symlinks through `..data`, a symlink to a timestamped directory.
    config = tmp_path / "config"
    config.mkdir()
    (config / "..v1").mkdir()
    (config / "..v1" / "edge.yaml").write_text(RULE.format(n=4))
    os.symlink("..v1", config / "..data")
    os.symlink("..data/edge.yaml", config / "edge.yaml")
    server = start(config)
    assert limit_of(server) == 4
    (config / "..v2").mkdir()
    (config / "..v2" / "edge.yaml").write_text(RULE.format(n=5))
    os.symlink("..v2", config / "..data_tmp")
    os.rename(config / "..data_tmp", config / "..data")  # the atomic swap
    wait_for_limit(server, 5)


def test_calls_in_flight_through_reloads_all_answer_and_a_bad_file_keeps_the_old_config(config_dir, start):
    config = config_dir({"edge.yaml": RULE.format(n=1000)})
    server = start(config)
    failures, answered = [], [0]
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            try:
                server.call("edge", descriptor(("b", "y")), descriptor(("a", "y")))
                answered[0] += 1
            except Exception as error:  # noqa: BLE001 - any failure is the finding
                failures.append(error)
    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    try:  # the callers stop whatever happens: left running, they would keep the test process from exiting
        for n in range(1001, 1011):
            (config / "edge.yaml").write_text(RULE.format(n=n))
            # (under load the 1 s target is no bound: a busy machine, or a sanitizer build, takes longer)
            wait_for(lambda: limit_of(server) == n, f"the new limit {n} under load")
        (config / "edge.yaml").write_text("domain: edge\ndescriptors:\n  - key: a\n    colour: red\n")
        wait_for(lambda: "config not reloaded" in server.log.read_text(), "the bad file refused")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert failures == [] and answered[0] > 0
    assert limit_of(server) == 1010
    assert "edge.yaml:4: config error, unknown key 'colour'" in server.log.read_text()
    assert 'ratewarden_server_config_loads_total{result="error"} 1\n' in server.http("GET", "/metrics")[2]
    assert server.call("edge", descriptor(("a", "z"))).overall_code == rls_pb2.RateLimitResponse.OK


def test_reloads_under_concurrent_load_on_redis_fail_no_call(config_dir, start, redis):
    """16 gRPC and 4 HTTP callers without pause, on Redis (each call's descriptors in flight in the store while the
    configuration is swapped), through 20 reloads — edits in place, renames into place, SIGHUPs, a bad file between
    them: every call answers OK, and both of a call's descriptors are limited by one configuration, the one before a
    reload or the one after it, never a mix."""
    both = "domain: edge\ndescriptors:\n  - key: a\n    rate_limit: {{unit: hour, requests_per_unit: {n}}}\n" \
           "  - key: b\n    rate_limit: {{policy: {n}/hour, algorithm: sliding_window}}\n"
    config = config_dir({"edge.yaml": both.format(n=100_000)})
    server = start(config, redis.url)
    versions = {100_000}
    failures, seen = [], set()
    answered = [0] * 20
    stop = threading.Event()
    lock = threading.Lock()

    def grpc_caller(i: int) -> None:
        while not stop.is_set():
            try:
                r = server.call("edge", descriptor(("a", f"g{i}")), descriptor(("b", f"g{i}")))
                limits = [s.current_limit.requests_per_unit for s in r.statuses]
                assert r.overall_code == rls_pb2.RateLimitResponse.OK and len(set(limits)) == 1, r
                with lock:
                    assert limits[0] in versions, limits
                    seen.add(limits[0])
                answered[i] += 1
            except Exception as error:  # noqa: BLE001 - any failure is the finding
                failures.append(error)

    def http_caller(i: int) -> None:
        body = json.dumps({"domain": "edge", "descriptors": [{"entries": [{"key": "a", "value": f"h{i}"}]},
                                                             {"entries": [{"key": "b", "value": f"h{i}"}]}]})
        connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=10)
        while not stop.is_set():
            try:
                connection.request("POST", "/json", body=body)
                response = connection.getresponse()
                answer = json.loads(response.read())
                limits = [s["currentLimit"]["requestsPerUnit"] for s in answer["statuses"]]
                assert response.status == 200 and len(set(limits)) == 1, answer
                with lock:
                    assert limits[0] in versions, limits
                answered[i] += 1
            except Exception as error:  # noqa: BLE001
                failures.append(error)
        connection.close()

    threads = [threading.Thread(target=grpc_caller, args=(i,)) for i in range(16)]
    threads += [threading.Thread(target=http_caller, args=(i,)) for i in range(16, 20)]
    for t in threads:
        t.start()
    try:
        for n in range(100_001, 100_021):
            with lock:
                versions.add(n)
            if n % 3 == 0:
                (config / "edge.yaml").write_text(both.format(n=n))
            else:
                (config / ".edge.yaml.tmp").write_text(both.format(n=n))
                os.replace(config / ".edge.yaml.tmp", config / "edge.yaml")
            if n % 5 == 0:
                os.kill(server.process.pid, signal.SIGHUP)
            if n % 7 == 0:  # a bad file, then the good one: the bad one is refused, the calls go on
                refused = server.log.read_text().count("config not reloaded")
                (config / "edge.yaml").write_text("domain: edge\ndescriptors: [{key: a, colour: red}]\n")
                wait_for(lambda: server.log.read_text().count("config not reloaded") > refused, "the bad file refused")
                (config / "edge.yaml").write_text(both.format(n=n))
            before = sum(answered)
            wait_for(lambda: n in seen and sum(answered) > before + 50, f"calls limited by {n}, under load")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert failures == [], failures[:5]
    assert all(answered), answered
    drain_cleanly(server)  # the configurations swapped out are freed (LeakSanitizer, in the build-asan binary)


def test_a_change_right_after_the_server_says_it_listens_is_never_missed(config_dir, start):
    # The directory was watched only after the ready line: a change in between was never loaded (2 starts in 30).
    config = config_dir({"edge.yaml": RULE.format(n=1)})
    for n in range(2, 22):
        server = start(config)
        (config / "edge.yaml").write_text(RULE.format(n=n))
        wait_for(lambda: limit_of(server) == n, f"the change to {n} made at once, loaded")
        server.stop()
