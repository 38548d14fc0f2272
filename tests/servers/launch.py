#!/usr/bin/env python3
"""The test servers of every suite: starts redis-server processes (or one PostgreSQL), stays their parent, and
never leaks one.

    launch.py [--tls | --tls-only] [--unix] [--cluster N] [-- REDIS-SERVER-ARGS...]
    launch.py --postgres     a throwaway PostgreSQL cluster (a fresh copy of one initdb made once per machine, a
                             free loopback port)
    launch.py --sentinel [--tls-only]   Redis Sentinel: node 0 the master, node 1 its replica, nodes 2-4 sentinels
                             monitoring them as "mymaster" (a failover takes a few seconds: SentinelNode); with
                             --tls-only every node and sentinel listens on TLS only, and they talk TLS to each other
    launch.py --toxiproxy ...  and a Toxiproxy in front of every node (see toxiproxy_binary(); cluster nodes announce
                             their proxy's port, so that clients following CLUSTER SLOTS and MOVED go through it)

Prints one JSON line when everything is ready (see ready() below), or {"ok": false, "error": ...} and exits. Then
reads commands from stdin, one a line, each answered by one JSON line ({"ok": true, "pid": P} or
{"ok": false, "error": ...}):
    kill I   SIGKILL node I           start I  restart it on the same port(s) and socket, wait for PING
    stop I   SIGSTOP node I           cont I   SIGCONT node I
(PostgreSQL: the signals go to the postmaster and every backend; start waits until it accepts connections.)
    quit     kill every node and remove the directories, then answer
End of stdin -- the test process exited, crashed or was killed -- does what quit does. The servers also die with
the launcher itself: they are started with PR_SET_PDEATHSIG.
Standard library only.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

HOST = "127.0.0.1"
START_ATTEMPTS = 5  # a free port may be taken by another process before redis-server binds it
PR_SET_PDEATHSIG = 1
LIBC = ctypes.CDLL(None)  # loaded here: a child between fork and exec should not dlopen


class Failure(Exception):
    pass


class RedisError(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def die_with_launcher(launcher: int) -> None:
    """In the child between fork and exec: SIGKILL when the launcher dies, even if it died already."""
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != launcher:
        os._exit(1)


def make_certificates(directory: Path) -> Dict[str, str]:
    """A throwaway CA, a server certificate it signs (localhost, 127.0.0.1), a client certificate it signs, and an
    unrelated self-signed CA for the tests of a wrong certificate."""
    directory.mkdir()
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"]

    def openssl(*args: str) -> None:
        done = subprocess.run(["openssl", *args], cwd=directory, capture_output=True, text=True)
        if done.returncode != 0:
            raise Failure(f"openssl {args[0]}: {done.stderr.strip()}")

    for name in ("ca", "wrong-ca"):
        openssl("req", "-x509", *key, "-keyout", f"{name}.key", "-out", f"{name}.crt", "-subj", f"/CN=ratewarden {name}",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    extensions = {
        # Cluster nodes also present the server certificate as clients of each other: clientAuth too.
        "server": "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n",
        "client": "extendedKeyUsage=clientAuth\n",
    }
    for name, ext in extensions.items():
        (directory / f"{name}.ext").write_text("basicConstraints=CA:FALSE\n" + ext)
        openssl("req", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN=ratewarden {name}")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt")
    return {"ca": str(directory / "ca.crt"), "cert": str(directory / "client.crt"),
            "key": str(directory / "client.key"), "wrong_ca": str(directory / "wrong-ca.crt"),
            "server_cert": str(directory / "server.crt"), "server_key": str(directory / "server.key")}


def call(node: "Node", *args: str, timeout: float = 2.0) -> Any:
    """One command on a fresh connection (plain port, else TLS, else Unix socket); returns the decoded reply."""
    if node.port:
        sock = socket.create_connection((HOST, node.port), timeout)
    elif node.tls_port:
        assert node.tls is not None
        context = ssl.create_default_context(cafile=node.tls["ca"])
        context.load_cert_chain(node.tls["cert"], node.tls["key"])
        sock = context.wrap_socket(socket.create_connection((HOST, node.tls_port), timeout), server_hostname=HOST)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(timeout)
        sock.connect(str(node.unix))
    with sock, sock.makefile("rb") as reader:
        sock.sendall(b"".join([f"*{len(args)}\r\n".encode()] +
                              [f"${len(a.encode())}\r\n{a}\r\n".encode() for a in args]))
        return read_reply(reader)


def read_reply(reader: Any) -> Any:
    line = reader.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError("connection closed mid-reply")
    kind, body = line[:1], line[1:-2].decode()
    if kind == b"+":
        return body
    if kind == b"-":
        raise RedisError(body)
    if kind == b":":
        return int(body)
    if kind == b"$":
        return None if int(body) < 0 else reader.read(int(body) + 2)[:-2].decode()
    if kind == b"*":
        return [read_reply(reader) for _ in range(int(body))]
    raise ConnectionError(f"unexpected reply {line!r}")


class Node:
    """One redis-server: its directory, ports and socket stay the same across restarts."""

    def __init__(self, index: int, root: Path, options: argparse.Namespace, tls: Optional[Dict[str, str]]) -> None:
        self.index = index
        self.dir = root / f"node{index}"
        self.dir.mkdir()
        self.options = options
        self.tls = tls
        self.unix = self.dir / "redis.sock" if options.unix else None
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.proxy_port = 0  # its Toxiproxy listener (--toxiproxy), once made
        self.pick_ports()

    def pick_ports(self) -> None:
        self.port = 0 if self.options.tls_only else free_port()
        self.tls_port = free_port() if self.tls else 0
        self.cluster_port = free_port() if self.options.cluster else 0

    def argv(self) -> List[str]:
        argv = ["redis-server", "--port", str(self.port), "--bind", HOST, "--dir", str(self.dir), "--save", "",
                "--appendonly", "no", "--enable-debug-command", "yes"]
        if self.tls:
            argv += ["--tls-port", str(self.tls_port), "--tls-cert-file", self.tls["server_cert"], "--tls-key-file",
                     self.tls["server_key"], "--tls-ca-cert-file", self.tls["ca"], "--tls-auth-clients", "optional"]
        if self.unix:
            argv += ["--unixsocket", str(self.unix), "--unixsocketperm", "700"]
        if self.options.cluster and self.proxy_port:  # a restart announces its proxy as the first start did
            argv += ["--cluster-announce-ip", HOST, "--cluster-announce-port", str(self.proxy_port)]
        if self.options.cluster:
            argv += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
                     "--cluster-port", str(self.cluster_port),
                     # The other masters keep serving their slots while one is down.
                     "--cluster-require-full-coverage", "no"]
            if self.tls:
                argv += ["--tls-cluster", "yes"]
        return argv + self.options.redis_args

    @property
    def pid(self) -> Optional[int]:
        return self.process.pid if self.process else None

    def launch(self) -> None:
        """The first start: on other free ports if redis-server could not bind the ones picked."""
        for attempt in range(START_ATTEMPTS):
            try:
                return self.start()
            except Failure:
                if attempt == START_ATTEMPTS - 1:
                    raise
                self.pick_ports()

    def start(self) -> None:
        if self.process:
            raise Failure(f"node {self.index} is running")
        launcher = os.getpid()
        with open(self.dir / "redis.log", "ab") as log:
            self.process = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            preexec_fn=lambda: die_with_launcher(launcher))
        deadline = time.monotonic() + 10
        while True:
            try:
                call(self, "PING")
                return
            except RedisError:  # any reply (NOAUTH, LOADING) says it is up
                return
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                log_tail = (self.dir / "redis.log").read_text(errors="replace").strip().splitlines()[-3:]
                raise Failure(f"redis-server (node {self.index}) did not start: " + " | ".join(log_tail))
            time.sleep(0.01)

    def kill(self) -> None:
        if self.process:
            self.process.kill()
            self.process.wait()
            self.process = None

    def signal(self, sig: int, wait_flag: int) -> None:
        """SIGSTOP or SIGCONT, and wait until the kernel reports it done."""
        if not self.process:
            raise Failure(f"node {self.index} is not running")
        os.kill(self.process.pid, sig)
        os.waitpid(self.process.pid, wait_flag)

    def urls(self) -> Dict[str, Optional[str]]:
        return {
            "url": f"redis://{HOST}:{self.port}" if self.port else None,
            "tls_url": f"rediss://{HOST}:{self.tls_port}?tls_ca={self.tls['ca']}" if self.tls else None,
            "unix_url": f"redis+unix://{self.unix}" if self.unix else None,
        }


def proc_field(pid: int, index: int) -> Optional[str]:
    """A field of /proc/PID/stat after the command name (0: the state, 1: the parent's pid), or None once gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[index]


def wait_for_states(pids: List[int], states: str, gone_counts: bool) -> None:
    """Until every process is in one of `states` (or gone, when that counts), for at most 5 s."""
    def reached(pid: int) -> bool:
        state = proc_field(pid, 0)
        return gone_counts if state is None else state in states

    deadline = time.monotonic() + 5
    left = list(pids)
    while left and time.monotonic() < deadline:
        left = [pid for pid in left if not reached(pid)]
        if left:
            time.sleep(0.01)
    if left:
        raise Failure(f"processes {left} did not reach state {states!r}")


class PostgresNode:
    """One PostgreSQL cluster in a directory of its own, on a free loopback port; the server refuses to run as root,
    so as root it runs as the `postgres` user (the directory is given to it). The postmaster is our child in a
    process group of its own: kill / stop / cont signal it and all its backends."""

    def __init__(self, index: int) -> None:
        self.index = index
        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
        if not bins:
            raise Failure("PostgreSQL is not installed (scripts/setup.sh installs postgresql)")
        self.bin = bins[-1].parent
        self.dir = Path(tempfile.mkdtemp(prefix="rw-postgres-"))
        self.user = None
        if os.getuid() == 0:
            import pwd
            self.user = pwd.getpwnam("postgres")
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.port = 0
        self.tls_port = 0
        self.cluster_port = 0
        self.unix = None
        self.proxy_port = 0
        # A copy of a cluster initdb made once, as fresh as its own: a launch took 1.4-1.8 s instead of 2.5-2.7 s.
        template = machine_cache(f"postgres-{self.bin.parent.name}-initdb", self.initdb)
        copy_tree(template / "data", self.dir / "data")

    def initdb(self, into: Path) -> None:
        """A new cluster in into/data. initdb runs as the server's user, in a directory of its own under /tmp (the
        cache may be in a home it cannot enter); cp -a keeps that user as the owner of the copy."""
        scratch = Path(tempfile.mkdtemp(prefix="rw-initdb-"))
        try:
            if self.user:
                os.chown(scratch, self.user.pw_uid, self.user.pw_gid)
            done = subprocess.run([str(self.bin / "initdb"), "-D", str(scratch / "data"), "-U", "postgres",
                                   "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"],
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, preexec_fn=self.demote)
            if done.returncode != 0:
                raise Failure("initdb failed: " + (done.stdout + done.stderr).strip()[-500:])
            copy_tree(scratch / "data", into / "data")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def demote(self) -> None:
        if self.user:
            os.setgroups([])
            os.setgid(self.user.pw_gid)
            os.setuid(self.user.pw_uid)

    @property
    def pid(self) -> Optional[int]:
        return self.process.pid if self.process else None

    def launch(self) -> None:
        for attempt in range(START_ATTEMPTS):
            self.port = free_port()
            try:
                return self.start()
            except Failure:
                if attempt == START_ATTEMPTS - 1:
                    raise

    def start(self) -> None:
        if self.process:
            raise Failure(f"node {self.index} is running")
        launcher = os.getpid()

        def child() -> None:
            os.setsid()  # its own process group: signals reach the backends too
            self.demote()  # before PR_SET_PDEATHSIG, which a change of user clears
            die_with_launcher(launcher)

        argv = [str(self.bin / "postgres"), "-D", str(self.dir / "data"), "-p", str(self.port), "-k", str(self.dir),
                "-c", "listen_addresses=" + HOST, "-c", "fsync=off", "-c", "synchronous_commit=off",
                "-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "logging_collector=off"]
        deadline = time.monotonic() + 30
        while True:
            with open(self.dir / "postgres.log", "ab") as log:
                self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                                preexec_fn=child)
            while True:
                ready = subprocess.run([str(self.bin / "pg_isready"), "-q", "-h", HOST, "-p", str(self.port)],
                                       stdin=subprocess.DEVNULL, capture_output=True)
                if ready.returncode == 0:
                    return
                if self.process.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            self.kill()
            tail = (self.dir / "postgres.log").read_text(errors="replace").strip().splitlines()[-3:]
            # Restarted right after kill(): the killed server's backends, orphaned, may still be leaving its shared
            # memory. Tried again until they have gone.
            if not any("pre-existing shared memory block" in line for line in tail) or time.monotonic() > deadline:
                raise Failure(f"postgres (node {self.index}) did not start: " + " | ".join(tail))
            time.sleep(0.1)

    def children(self) -> List[int]:
        """The postmaster's children (backends, background workers): each calls setsid(), so a signal to the
        postmaster's process group misses them."""
        assert self.process
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and proc_field(int(entry), 1) == str(self.process.pid):
                found.append(int(entry))
        return found

    def kill(self) -> None:
        """SIGKILL to the postmaster and every backend: a server dying whole (a machine gone), none of its backends
        left serving the connections they had, nor holding its shared memory past the kill."""
        if self.process:
            try:  # stopped first, so that it forks no backend between the listing and the kill
                os.kill(self.process.pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
            children = self.children()
            for pid in [self.process.pid] + children:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.process.wait()
            self.process = None
            wait_for_states(children, "Z", gone_counts=True)

    def signal(self, sig: int, wait_flag: int) -> None:
        """SIGSTOP or SIGCONT to the postmaster and every backend: the whole server hangs (or goes on), including
        the connections already open."""
        if not self.process:
            raise Failure(f"node {self.index} is not running")
        os.killpg(self.process.pid, sig)
        os.waitpid(self.process.pid, wait_flag)
        children = self.children()
        for pid in children:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        # (Z: a backend that was ending anyway)
        wait_for_states(children, "TZ" if sig == signal.SIGSTOP else "RSDIZ", gone_counts=True)

    def urls(self) -> Dict[str, Optional[str]]:
        return {"url": f"postgres://postgres@{HOST}:{self.port}/postgres", "tls_url": None, "unix_url": None}

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


SENTINEL_SERVICE = "mymaster"


class ReplicaNode(Node):
    """A redis-server started as the replica of `master` (the sentinels re-point it after a failover)."""

    def __init__(self, index: int, root: Path, options: argparse.Namespace, master: Node,
                 tls: Optional[Dict[str, str]]) -> None:
        self.master = master
        super().__init__(index, root, options, tls)

    def argv(self) -> List[str]:
        if self.tls:
            return super().argv() + ["--tls-replication", "yes", "--replicaof", HOST, str(self.master.tls_port)]
        return super().argv() + ["--replicaof", HOST, str(self.master.port)]


class SentinelNode(Node):
    """A redis-server --sentinel monitoring `master`, its config file in its directory (Sentinel rewrites it, and a
    restart reads what it had learnt)."""

    def __init__(self, index: int, root: Path, options: argparse.Namespace, master: Node,
                 tls: Optional[Dict[str, str]]) -> None:
        self.master = master
        super().__init__(index, root, options, tls)

    def pick_ports(self) -> None:
        super().pick_ports()
        self.write_conf()

    def write_conf(self) -> None:
        # Small timings: a master that does not answer for 1 s is down; a failover that stalls is tried again after
        # 3 s (a new election). Sentinel announces 127.0.0.1: the addresses it hands out are the loopback ones.
        tls = (f"tls-port {self.tls_port}\ntls-cert-file {self.tls['server_cert']}\n"
               f"tls-key-file {self.tls['server_key']}\ntls-ca-cert-file {self.tls['ca']}\n"
               "tls-auth-clients optional\ntls-replication yes\n") if self.tls else ""
        (self.dir / "sentinel.conf").write_text(
            f"port {self.port}\nbind {HOST}\ndir {self.dir}\n{tls}"
            f"sentinel monitor {SENTINEL_SERVICE} {HOST} {self.master.port or self.master.tls_port} 2\n"
            f"sentinel down-after-milliseconds {SENTINEL_SERVICE} 1000\n"
            f"sentinel failover-timeout {SENTINEL_SERVICE} 3000\n"
            f"sentinel parallel-syncs {SENTINEL_SERVICE} 1\n")

    def argv(self) -> List[str]:
        return ["redis-server", str(self.dir / "sentinel.conf"), "--sentinel"]


def sentinel_ready(master: Node, replica: Node, sentinels: List[Node]) -> bool:
    """The replica in sync, and every sentinel knowing the master, the replica and the two other sentinels (a
    failover needs them: quorum 2, and a majority of the sentinels to elect the leader)."""
    try:
        if "master_link_status:up" not in call(replica, "INFO", "replication"):
            return False
        for s in sentinels:
            if call(s, "SENTINEL", "get-master-addr-by-name", SENTINEL_SERVICE) != [HOST, str(master.port or
                                                                                        master.tls_port)]:
                return False
            if len(call(s, "SENTINEL", "replicas", SENTINEL_SERVICE)) != 1:
                return False
            if len(call(s, "SENTINEL", "sentinels", SENTINEL_SERVICE)) != len(sentinels) - 1:
                return False
    except (OSError, RedisError):
        return False
    return True


def launch_sentinel(root: Path, options: argparse.Namespace, nodes: List[Any], tls: Optional[Dict[str, str]]) -> None:
    """Node 0 the master, node 1 its replica, nodes 2-4 the sentinels (appended to `nodes` as they start, for the
    clean-up); returns once they all know each other."""
    nodes.append(Node(0, root, options, tls))
    nodes[0].launch()
    nodes.append(ReplicaNode(1, root, options, nodes[0], tls))
    nodes[1].launch()
    for index in range(2, 5):
        nodes.append(SentinelNode(index, root, options, nodes[0], tls))
        nodes[-1].launch()
    deadline = time.monotonic() + 60
    while not sentinel_ready(nodes[0], nodes[1], nodes[2:]):
        if time.monotonic() > deadline:
            raise Failure("the sentinels did not all discover the master, its replica and each other within 60 s")
        time.sleep(0.05)


TOXIPROXY_VERSION = "v2.5.0"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"


def machine_cache(name: str, make: Callable[[Path], None]) -> Path:
    """${XDG_CACHE_HOME:-~/.cache}/ratewarden/<name>, a directory that make(directory) fills the first time. Under a
    lock (launchers started at once, as parallel test entries start them, make it once) and renamed into place when
    whole: a launcher killed halfway leaves no half-made entry behind."""
    import fcntl
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ratewarden"
    entry = root / name
    if entry.is_dir():
        return entry
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if entry.is_dir():  # made by another launcher while this one waited
            return entry
        staging = Path(tempfile.mkdtemp(prefix=f"{name}.", dir=root))
        try:
            make(staging)
            os.rename(staging, entry)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return entry


def copy_tree(source: Path, target: Path) -> None:
    """cp -a: modes and owners kept (PostgreSQL wants its data directory 0700 and its user's)."""
    done = subprocess.run(["cp", "-a", str(source), str(target)], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise Failure(f"cp -a {source} {target} failed: " + done.stderr.strip()[-500:])


def toxiproxy_binary() -> Path:
    """toxiproxy-server, built from the Go module proxy into the machine's cache the first time (about 30 s)."""
    def build(into: Path) -> None:
        go = shutil.which("go") or "/usr/local/go/bin/go"
        if not os.access(go, os.X_OK):
            raise Failure("Go is needed to build Toxiproxy (/usr/local/go/bin/go)")
        env = dict(os.environ, GOBIN=str(into), GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
        done = subprocess.run([go, "install", f"{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}"], env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if done.returncode != 0:
            raise Failure("go install Toxiproxy failed: " + (done.stdout + done.stderr).strip()[-500:])

    return machine_cache(f"toxiproxy-server-{TOXIPROXY_VERSION}", build) / "server"


class Toxiproxy:
    """One toxiproxy-server on a free loopback port (its HTTP API), our child like the servers; a proxy per node,
    named "nodeI", listening on a port of its own. Tests drive the toxics through the API."""

    def __init__(self, root: Path) -> None:
        binary = toxiproxy_binary()
        launcher = os.getpid()
        for attempt in range(START_ATTEMPTS):
            self.port = free_port()
            with open(root / "toxiproxy.log", "ab") as log:
                self.process = subprocess.Popen([str(binary), "-host", HOST, "-port", str(self.port)],
                                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                                preexec_fn=lambda: die_with_launcher(launcher))
            deadline = time.monotonic() + 10
            while self.process.poll() is None and time.monotonic() < deadline:
                try:
                    self.request("GET", "/version")
                    return
                except OSError:
                    time.sleep(0.01)
            self.kill()
            if attempt == START_ATTEMPTS - 1:
                tail = (root / "toxiproxy.log").read_text(errors="replace").strip().splitlines()[-3:]
                raise Failure("toxiproxy-server did not start: " + " | ".join(tail))

    def request(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        import http.client
        connection = http.client.HTTPConnection(HOST, self.port, timeout=5)
        try:
            connection.request(method, path, json.dumps(body) if body is not None else None,
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            text = response.read().decode()
        finally:
            connection.close()
        if response.status >= 300:
            raise Failure(f"toxiproxy {method} {path}: {response.status} {text.strip()}")
        return json.loads(text) if "json" in response.getheader("Content-Type", "") else text

    def add_proxy(self, node: Any) -> None:
        """A proxy in front of the node on a port the kernel picks (no race for a free port); it keeps pointing at
        the node across restarts, which keep the node's port."""
        made = self.request("POST", "/proxies", {"name": f"node{node.index}", "listen": f"{HOST}:0",
                                                 "upstream": f"{HOST}:{node.port}", "enabled": True})
        node.proxy_port = int(made["listen"].rsplit(":", 1)[1])
        if isinstance(node, Node) and node.options.cluster:
            call(node, "CONFIG", "SET", "cluster-announce-ip", HOST)
            call(node, "CONFIG", "SET", "cluster-announce-port", str(node.proxy_port))

    def kill(self) -> None:
        if self.process:
            self.process.kill()
            self.process.wait()
            self.process = None  # type: ignore[assignment]


def create_cluster(nodes: List[Node], tls: Optional[Dict[str, str]]) -> None:
    """redis-cli --cluster create, then wait until every node says cluster_state:ok and agrees on the slot map."""
    tls_args = ["--tls", "--cacert", tls["ca"], "--cert", tls["cert"], "--key", tls["key"]] if tls else []
    seeds = [f"{HOST}:{n.tls_port if tls else n.port}" for n in nodes]
    done = subprocess.run(["redis-cli", *tls_args, "--cluster", "create", *seeds, "--cluster-replicas", "0",
                           "--cluster-yes"], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        raise Failure("redis-cli --cluster create failed: " + (done.stdout + done.stderr).strip()[-500:])
    deadline = time.monotonic() + 30
    while not cluster_ready(nodes):
        if time.monotonic() > deadline:
            raise Failure("the cluster did not reach cluster_state:ok with one slot map on every node")
        time.sleep(0.05)


def cluster_ready(nodes: List[Node]) -> bool:
    maps = []
    try:
        for node in nodes:
            info = call(node, "CLUSTER", "INFO")
            if "cluster_state:ok" not in info or f"cluster_known_nodes:{len(nodes)}\r" not in info:
                return False
            maps.append(sorted((first, last, owner[2]) for first, last, owner, *_ in call(node, "CLUSTER", "SLOTS")))
    except (OSError, RedisError):
        return False
    return all(m == maps[0] for m in maps)


def proxied(url: Optional[str], port: int, proxy_port: int) -> Optional[str]:
    """The URL through the node's proxy (None without --toxiproxy)."""
    return url.replace(f"{HOST}:{port}", f"{HOST}:{proxy_port}") if url and proxy_port else None


def ready(root: Path, nodes: List[Node], tls: Optional[Dict[str, str]], clustered: bool,
          sentinel: bool = False, toxiproxy: Optional[Toxiproxy] = None) -> Dict[str, Any]:
    """The ready line: every node's pid, directory, ports, socket and URLs (null when it has no such listener), the
    cluster's URLs, the sentinel set's (its URL, service name, and which nodes are the master, the replica and the
    sentinels), and the certificate files a TLS client needs. With --toxiproxy: its API port, and each node's proxy
    port and the URLs through the proxies."""
    cluster = None
    if clustered:
        hosts = ",".join(f"{HOST}:{n.port}" for n in nodes)
        tls_hosts = ",".join(f"{HOST}:{n.tls_port}" for n in nodes)
        proxy_hosts = ",".join(f"{HOST}:{n.proxy_port}" for n in nodes)
        cluster = {"url": f"redis+cluster://{hosts}" if nodes[0].port else None,
                   "tls_url": f"rediss+cluster://{tls_hosts}?tls_ca={tls['ca']}" if tls else None,
                   "proxy_url": f"redis+cluster://{proxy_hosts}" if toxiproxy else None}
    return {
        "ok": True,
        "dir": str(root),
        "nodes": [{"pid": n.pid, "dir": str(n.dir), "port": n.port or None, "tls_port": n.tls_port or None,
                   "cluster_port": n.cluster_port or None, "unix": str(n.unix) if n.unix else None, **n.urls(),
                   "proxy": f"node{n.index}" if n.proxy_port else None, "proxy_port": n.proxy_port or None,
                   "proxy_url": proxied(n.urls()["url"], n.port, n.proxy_port)}
                  for n in nodes],
        "toxiproxy": {"api_port": toxiproxy.port, "pid": toxiproxy.process.pid} if toxiproxy else None,
        "cluster": cluster,
        "sentinel": {"url": "redis+sentinel://" + ",".join(f"{HOST}:{n.port}" for n in nodes[2:]) +
                            f"/{SENTINEL_SERVICE}" if nodes[0].port else None,
                     "tls_url": "rediss+sentinel://" + ",".join(f"{HOST}:{n.tls_port}" for n in nodes[2:]) +
                                f"/{SENTINEL_SERVICE}?tls_ca={tls['ca']}" if tls else None,
                     "service": SENTINEL_SERVICE, "master": 0, "replica": 1, "sentinels": [2, 3, 4]}
        if sentinel else None,
        "tls": {k: tls[k] for k in ("ca", "cert", "key", "wrong_ca")} if tls else None,
    }


def handle(line: str, nodes: List[Node]) -> Dict[str, Any]:
    try:
        verb, index = line.split()
        if not 0 <= int(index) < len(nodes):
            raise ValueError
    except ValueError:
        return {"ok": False, "error": f"bad command {line.strip()!r}"}
    node = nodes[int(index)]
    try:
        if verb == "kill":
            node.kill()
        elif verb == "start":
            node.start()
        elif verb == "stop":
            node.signal(signal.SIGSTOP, os.WUNTRACED)
        elif verb == "cont":
            node.signal(signal.SIGCONT, os.WCONTINUED)
        else:
            return {"ok": False, "error": f"unknown command {verb!r}"}
    except Failure as e:
        return {"ok": False, "error": str(e)}
    return {"ok": True, "pid": node.pid}


def reply(message: Dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def parse_args() -> argparse.Namespace:
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tls", action="store_true", help="a TLS port too")
    parser.add_argument("--tls-only", action="store_true", help="a TLS port and no plain port")
    parser.add_argument("--unix", action="store_true", help="a Unix socket too")
    parser.add_argument("--cluster", type=int, default=0, metavar="N", help="a cluster of N masters (N >= 3)")
    parser.add_argument("--postgres", action="store_true", help="one PostgreSQL server instead of Redis")
    parser.add_argument("--sentinel", action="store_true", help="a master, its replica and 3 sentinels")
    parser.add_argument("--toxiproxy", action="store_true", help="a Toxiproxy proxy in front of every node")
    options = parser.parse_args(argv[:split])
    if options.sentinel and (options.cluster or (options.tls and not options.tls_only) or options.unix or
                             options.postgres):
        parser.error("--sentinel takes no other mode than --tls-only")
    if options.toxiproxy and options.tls_only:
        parser.error("--toxiproxy proxies the plain TCP ports, which --tls-only leaves closed")
    if options.cluster and options.cluster < 3:
        parser.error("--cluster needs at least 3 masters")
    options.tls = options.tls or options.tls_only
    options.redis_args = argv[split + 1:]
    return options


def main() -> int:
    # Whatever else the test process left open (pipes to its other children...) is not ours to hold open.
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    options = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # runs the clean-up below
    root = Path(tempfile.mkdtemp(prefix="rw-servers-"))
    nodes: List[Any] = []
    toxiproxy: Optional[Toxiproxy] = None
    quitting = False
    try:
        try:
            tls = make_certificates(root / "tls") if options.tls else None
            if options.toxiproxy:
                toxiproxy = Toxiproxy(root)
            if options.postgres:
                nodes.append(PostgresNode(0))
                nodes[-1].launch()
            if options.sentinel:
                launch_sentinel(root, options, nodes, tls)
            for index in range(0 if options.postgres or options.sentinel else options.cluster or 1):
                nodes.append(Node(index, root, options, tls))
                nodes[-1].launch()
            if toxiproxy:
                for node in nodes:
                    toxiproxy.add_proxy(node)
            if options.cluster:
                create_cluster(nodes, tls)
        except Failure as e:
            reply({"ok": False, "error": str(e)})
            return 1
        except OSError as e:  # redis-server, redis-cli or openssl is missing
            reply({"ok": False, "error": f"{e} (scripts/setup.sh installs what the tests need)"})
            return 1
        reply(ready(root, nodes, tls, bool(options.cluster), options.sentinel, toxiproxy))
        for line in iter(sys.stdin.readline, ""):
            if line.strip() == "quit":
                quitting = True
                break
            reply(handle(line, nodes))
    except BrokenPipeError:  # the test is gone: clean up quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    finally:
        if toxiproxy:
            toxiproxy.kill()
        for node in nodes:
            node.kill()
            if isinstance(node, PostgresNode):
                node.remove()
        shutil.rmtree(root, ignore_errors=True)
    if quitting:
        reply({"ok": True})
    return 0


if __name__ == "__main__":
    sys.exit(main())
