"""The test servers (tests/servers/launch.py) through redis_server.py: each listener they report answers, the
launcher's commands do what they say, and no server outlives its test process, however that process ends."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Tuple

import pytest

from redis_server import Launcher, RedisCluster, RedisServer, TlsFiles

HERE = Path(__file__).resolve().parent


def tls_cli(tls: TlsFiles, ca: str, port: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["redis-cli", "--tls", "--cacert", ca, "--cert", tls.cert, "--key", tls.key, "-p", str(port),
                           *args], capture_output=True, text=True, timeout=10)


def unix_ping(path: str, timeout: float = 2.0) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(b"PING\r\n")
        return s.recv(64)


def state_of(pid: int) -> str:
    """The state letter of /proc/PID/stat ('S', 'T' stopped, 'Z' zombie), or '' when the pid does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return ""
    return stat[stat.rindex(")") + 2]


def alive(pid: int) -> bool:
    return state_of(pid) not in ("", "Z")  # nothing may reap orphans here (a container's init often does not)


def test_tls_and_unix_listeners_answer() -> None:
    with RedisServer("--requirepass", "pw", tls=True, unix=True) as server:
        assert server.tls is not None
        assert server.url == f"redis://127.0.0.1:{server.port}"
        assert server.tls_url == f"rediss://127.0.0.1:{server.tls_port}?tls_ca={server.tls.ca}"
        assert server.unix_url == f"redis+unix://{server.unix_path}"
        assert tls_cli(server.tls, server.tls.ca, server.tls_port, "-a", "pw", "ping").stdout.strip() == "PONG"
        wrong = tls_cli(server.tls, server.tls.wrong_ca, server.tls_port, "ping")
        assert wrong.returncode != 0 and "certificate verify failed" in wrong.stderr
        assert server.unix_path is not None and unix_ping(server.unix_path).startswith(b"-NOAUTH")


def test_tls_only_cluster_with_sockets() -> None:
    with RedisCluster(tls_only=True, unix=True) as cluster:
        assert cluster.tls is not None
        tls_ports = [n.tls_port for n in cluster.nodes]
        assert all(n.port == 0 for n in cluster.nodes)
        with pytest.raises(AttributeError):
            cluster.url
        assert cluster.tls_url == ("rediss+cluster://" + ",".join(f"127.0.0.1:{p}" for p in tls_ports) +
                                   f"?tls_ca={cluster.tls.ca}")
        slots = tls_cli(cluster.tls, cluster.tls.ca, tls_ports[0], "cluster", "slots").stdout.split()
        assert all(str(p) in slots for p in tls_ports)
        for node in cluster.nodes:
            assert "cluster_state:ok" in node.cli("cluster", "info")  # through its Unix socket


def test_stop_cont_kill_and_start() -> None:
    with RedisServer(unix=True) as server:
        first, path = server.pid, server.unix_path
        assert first is not None and path is not None
        server.stop()
        assert state_of(first) == "T"
        with pytest.raises(socket.timeout):
            unix_ping(path, timeout=0.3)
        server.cont()
        assert unix_ping(path) == b"+PONG\r\n"
        port = server.port
        server.kill()
        assert server.pid is None and not alive(first)
        server.start()
        assert server.pid is not None and server.pid != first and server.port == port
        assert server.cli("PING") == "PONG" and unix_ping(path) == b"+PONG\r\n"


def test_launcher_commands() -> None:
    launcher = Launcher()
    directory = launcher.ready["dir"]
    with pytest.raises(RuntimeError, match="bad command"):
        launcher.send("kill")
    with pytest.raises(RuntimeError, match="unknown command"):
        launcher.send("pause 0")
    with pytest.raises(RuntimeError, match="is running"):
        launcher.send("start 0")
    assert launcher.send("quit") == {"ok": True}  # answered once everything is gone
    assert not os.path.exists(directory)
    launcher.close()


def test_a_failed_start_says_why() -> None:
    with pytest.raises(RuntimeError, match="did not start.*no-such-option"):
        RedisServer("--no-such-option", "1")


# A child process starts a server and a cluster through redis_server.py, prints their pids and directories, and ends.
CHILD = """
import json, os, resource, signal, sys, time
from redis_server import RedisCluster, RedisServer
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # abort() leaves no core file
server = RedisServer(tls=True, unix=True)
cluster = RedisCluster(unix=True)
print(json.dumps([[n.pid, n.dir] for n in [server, *cluster.nodes]]), flush=True)
end = sys.argv[1]
if end == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
elif end == "abort":
    os.abort()
elif end == "launcher-sigkill":  # the launchers die first: their servers must die with them
    for launcher in (server._launcher, cluster._launcher):
        os.kill(launcher.process.pid, signal.SIGKILL)
    time.sleep(60)
sys.exit(0)
"""


@pytest.mark.parametrize("end", ["sigkill", "abort", "exit", "launcher-sigkill"])
def test_no_server_outlives_its_test_process(end: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, end], cwd=HERE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    servers: List[Tuple[int, str]] = json.loads(child.stdout.readline())
    assert len(servers) == 4
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid, _ in servers) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [pid for pid, _ in servers if alive(pid)] == []
    if end == "launcher-sigkill":  # nobody is left to remove the directories
        child.kill()
        for _, directory in servers:
            shutil.rmtree(Path(directory).parent, ignore_errors=True)
    while any(os.path.exists(d) for _, d in servers) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [d for _, d in servers if os.path.exists(d)] == []
    child.wait()
    child.stdout.close()
