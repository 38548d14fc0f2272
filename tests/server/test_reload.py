"""Hot reload that fires: an edited file, a file renamed into place and Kubernetes' ConfigMap symlink swap each take
effect within a second; counters survive for rules that did not change; calls in flight through a reload answer."""

from __future__ import annotations

import os
import threading
import time

from conftest import descriptor, rls_pb2

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
    for n in range(1001, 1011):
        (config / "edge.yaml").write_text(RULE.format(n=n))
        wait_for_limit(server, n)
    (config / "edge.yaml").write_text("domain: edge\ndescriptors:\n  - key: a\n    colour: red\n")
    deadline = time.monotonic() + 5
    while "config not reloaded" not in server.log.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    stop.set()
    for t in threads:
        t.join()
    assert failures == [] and answered[0] > 0
    assert limit_of(server) == 1010
    assert "edge.yaml:4: config error, unknown key 'colour'" in server.log.read_text()
    assert 'ratewarden_server_config_loads_total{result="error"} 1\n' in server.http("GET", "/metrics")[2]
    assert server.call("edge", descriptor(("a", "z"))).overall_code == rls_pb2.RateLimitResponse.OK
