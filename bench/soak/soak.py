#!/usr/bin/env python3
"""The soak (issue 38): mixed work for a while, every process's RSS, descriptors and threads sampled; after the
warm-up each must stay flat. bench/soak/run.sh builds what it needs and runs this; see it for the command line.

Stores: memory://?max_keys=200 (per process: the stream of distinct keys, each holding a whole quota for the 10 s
period, goes past the bound and is evicted), one redis-server, a 3-master Redis Cluster and one PostgreSQL, all
started through tests/servers/launch.py. Workers (each on all four stores; bench/soak/worker.*): Python sync calls,
Python asyncio calls, a Python process that forks (two children working as long as it does, a short-lived child every
2 s), Node (Promise and sync calls), C (sync and async calls). Every restart period, right after a sample, each store
is restarted: the redis-server, one cluster master (each in turn) and PostgreSQL are SIGKILLed together, started
again 1 s later (launch.py waits until each answers), and the next sample is taken no sooner than SETTLE s after they
answer: by then every worker has reconnected (a circuit's back-off is 1 s), so a descriptor count read then is not
one caught mid-reconnect.

What may legitimately move: a Redis store reopens its whole pool at once, but the PostgreSQL store opens its
connections as calls at once need them, up to its pool (here ?pool=2); after a restart a process that makes one call
at a time holds 1 or 2 again depending on whether two of its calls (a sweep of expired rows included) have
overlapped. That is one descriptor, bounded, and it counts against the 5% like any other: no descriptor is left out.

Verdict, per process: alive and making calls at every sample (no hang), ending with status 0 on SIGTERM, and from
the first sample after the warm-up to the end RSS and open descriptors within 5% of that first sample, threads
exactly equal to it. Store errors during restarts are expected: they are counted, not failures.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = ROOT / "tests" / "servers" / "launch.py"
TOLERANCE = 0.05
DOWNTIME = 1.0  # how long a killed store stays down
SETTLE = 2.0  # at least this long between the stores answering again and the next sample
# V8 grows its young generation in steps while a process runs (semi-spaces doubled when many objects survive a
# scavenge, up to 16 MB each on 64-bit): RSS stepped 63 -> 67 -> 74 MB over 10 minutes while the live heap stayed at
# 4-7 MB. Node starts here with the young generation at that size, where a long-running process ends up anyway.
NODE_YOUNG_GENERATION = ["--min-semi-space-size=16", "--max-semi-space-size=16"]
MEMORY_URL = "memory://?max_keys=200"  # small: the stream of distinct keys (living 10 s each) goes past it


class Failure(Exception):
    pass


def die_with_parent() -> None:
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no worker outlives the soak


class Servers:
    """One launch.py: its servers live exactly as long as it does (its stdin closed, it quits)."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen([sys.executable, str(LAUNCH), *args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent)
        self.ready = self.answer(f"launch.py {' '.join(args)}")

    def answer(self, what: str) -> Dict[str, Any]:
        assert self.process.stdout
        line = self.process.stdout.readline()
        message = json.loads(line) if line else {"ok": False, "error": "launch.py ended"}
        if not message.get("ok"):
            raise Failure(f"{what}: {message.get('error')}")
        return message

    def command(self, line: str) -> None:
        assert self.process.stdin
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        self.answer(line)

    def quit(self) -> None:
        try:
            if self.process.stdin:
                self.process.stdin.close()
            self.process.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


class Worker:
    """One worker process (and, for the fork worker, its children: same pipe, told apart by pid)."""

    def __init__(self, name: str, argv: List[str], log: Path) -> None:
        self.name = name
        self.log = log  # its stderr: the library's messages about the stores it saw fail, and any crash
        with open(log, "wb") as stderr:
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                                            text=True, start_new_session=True, preexec_fn=die_with_parent, cwd=ROOT)
        self.reports: Dict[int, Dict[str, Any]] = {}  # pid -> its latest line
        self.lock = threading.Lock()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self) -> None:
        assert self.process.stdout
        for line in self.process.stdout:
            try:
                report = json.loads(line)
            except ValueError:
                sys.stderr.write(f"{self.name}: {line}")
                continue
            with self.lock:
                self.reports[report["pid"]] = report

    def log_tail(self) -> str:
        """The end of its stderr, without the library's lines about failing stores (expected here)."""
        lines = self.log.read_text(errors="replace").splitlines()
        own = [line for line in lines if not line.startswith(("ratewarden: ", "\t"))]
        return "\n".join(f"  {self.name}: {line}" for line in own[-20:])

    def latest(self) -> Dict[int, Dict[str, Any]]:
        with self.lock:
            return dict(self.reports)

    def kill(self) -> None:
        """The whole process group (the fork worker's children too), whatever state it is in."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()


def proc_sample(pid: int) -> Optional[Dict[str, int]]:
    """RSS (kB), open descriptors and threads of a live process; None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields["State"].strip().startswith("Z"):
            return None
        return {"rss": int(fields["VmRSS"].split()[0]), "fds": len(os.listdir(f"/proc/{pid}/fd")),
                "threads": int(fields["Threads"])}
    except (OSError, KeyError):
        return None


class Soak:
    def __init__(self, options: argparse.Namespace) -> None:
        self.o = options
        self.servers: List[Servers] = []
        self.workers: List[Worker] = []
        self.processes: Dict[int, str] = {}  # pid -> name, every long-lived process sampled
        self.samples: List[Dict[str, Any]] = []  # {"t", "restart"?, "by_pid": {pid: sample}}
        self.calls_seen: Dict[int, int] = {}
        self.logs = Path(tempfile.mkdtemp(prefix="rw-soak-"))

    def start(self) -> None:
        redis = Servers()
        cluster = Servers("--cluster", "3")
        postgres = Servers("--postgres")
        self.servers = [redis, cluster, postgres]
        urls = [MEMORY_URL, redis.ready["nodes"][0]["url"], cluster.ready["cluster"]["url"],
                postgres.ready["nodes"][0]["url"] + "?pool=2"]  # on demand, up to 2: see above
        here = Path(__file__).resolve().parent
        python = [self.o.python, str(here / "worker.py")]
        node = [self.o.node, *NODE_YOUNG_GENERATION, str(here / "worker.js")]
        for name, argv in [("py-sync", python + ["sync"]), ("py-async", python + ["async"]),
                           ("py-fork", python + ["fork"]), ("node", node), ("c", [self.o.c_worker])]:
            self.workers.append(Worker(name, argv + [name] + urls, self.logs / f"{name}.log"))
        # Every process reporting (the fork worker's two children included) before the clock starts.
        deadline = time.monotonic() + 60
        while True:
            seen = {pid: r["name"] for w in self.workers for pid, r in w.latest().items()}
            if len(seen) == len(self.workers) + 2:
                break
            self.check_alive()
            if time.monotonic() > deadline:
                raise Failure(f"workers did not all report within 60 s: {sorted(seen.values())}")
            time.sleep(0.1)
        self.processes = dict(sorted(seen.items(), key=lambda kv: kv[1]))

    def check_alive(self) -> None:
        for w in self.workers:
            if w.process.poll() is not None:
                raise Failure(f"{w.name} ended with status {w.process.returncode}")

    def restart(self, number: int) -> str:
        """SIGKILL the redis-server, one cluster master and PostgreSQL together; start them again DOWNTIME later."""
        redis, cluster, postgres = self.servers
        node = number % 3
        began = time.monotonic()
        for servers, index in ((redis, 0), (cluster, node), (postgres, 0)):
            servers.command(f"kill {index}")
        time.sleep(DOWNTIME)
        for servers, index in ((redis, 0), (cluster, node), (postgres, 0)):
            servers.command(f"start {index}")
        return f"restart: redis, cluster master {node}, postgres (down {DOWNTIME:.0f} s, back in " \
               f"{time.monotonic() - began:.1f} s)"

    def sample(self, t: float) -> None:
        self.check_alive()
        by_pid: Dict[int, Dict[str, int]] = {}
        reports = {pid: r for w in self.workers for pid, r in w.latest().items()}
        for pid, name in self.processes.items():
            s = proc_sample(pid)
            if s is None:
                raise Failure(f"{name} (pid {pid}) is gone at {t:.0f} s")
            calls = reports[pid]["calls"]
            if calls <= self.calls_seen.get(pid, -1):
                raise Failure(f"{name} (pid {pid}) made no call since the last sample (hung?) at {t:.0f} s")
            self.calls_seen[pid] = calls
            by_pid[pid] = s
        self.samples.append({"t": t, "by_pid": by_pid})
        self.print_row(self.samples[-1])

    def run(self) -> None:
        o = self.o
        self.print_header()
        start = time.monotonic()
        ready_at = start  # when the stores last answered after a restart
        restarts = 0
        tick = o.interval
        while tick <= o.seconds + 1e-9:
            due = max(start + tick, ready_at + SETTLE)
            time.sleep(max(0.0, due - time.monotonic()))
            self.sample(time.monotonic() - start)
            if tick < o.seconds and tick % o.restart_every == o.restart_every - o.interval:
                self.check_alive()
                note = self.restart(restarts)
                restarts += 1
                ready_at = time.monotonic()
                print(f"{'':>6}  {note}", flush=True)
            if abs(tick - o.warmup) < 1e-9:
                print(f"{'':>6}  -- warm-up over: the sample above is each process's reference --", flush=True)
            tick += o.interval
        self.stop()

    def stop(self) -> None:
        """SIGTERM to every long-lived process; each ends its loop, reports and exits with status 0."""
        for pid in self.processes:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for w in self.workers:
            try:
                w.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                raise Failure(f"{w.name} did not exit within 30 s of SIGTERM")
            if w.process.returncode != 0:
                raise Failure(f"{w.name} exited with status {w.process.returncode}")
        time.sleep(0.2)  # the readers take the last lines
        reports = {pid: r for w in self.workers for pid, r in w.latest().items()}
        for pid, name in self.processes.items():
            if not reports[pid].get("done"):
                raise Failure(f"{name} (pid {pid}) ended without its final report")

    def cleanup(self, failed: bool) -> None:
        for w in self.workers:
            w.kill()
            if failed and w.log_tail():
                print(f"{w.name}'s stderr (the end):\n{w.log_tail()}")
        for s in self.servers:
            s.quit()
        shutil.rmtree(self.logs, ignore_errors=True)

    # ---- output ----

    def print_header(self) -> None:
        o = self.o
        print(f"soak: {o.seconds} s, a sample every {o.interval} s, warm-up {o.warmup} s, every store restarted every "
              f"{o.restart_every} s; {len(self.processes)} processes")
        print("each cell: RSS MB / open descriptors / threads")
        print(f"{'t (s)':>6}  " + "  ".join(f"{name:>16}" for name in self.processes.values()), flush=True)

    def print_row(self, sample: Dict[str, Any]) -> None:
        cells = []
        for pid in self.processes:
            s = sample["by_pid"][pid]
            cells.append(f"{s['rss'] / 1024:7.1f} /{s['fds']:3d} /{s['threads']:2d}")
        print(f"{sample['t']:6.0f}  " + "  ".join(f"{c:>16}" for c in cells), flush=True)

    def verdicts(self) -> bool:
        """One line per process, a Markdown table (docs/deployment.md shows one), and the overall verdict."""
        after = [s for s in self.samples if s["t"] >= self.o.warmup - 1e-9]
        reports = {pid: r for w in self.workers for pid, r in w.latest().items()}
        print()
        print("| process | RSS MB first / last / max | fds first / last / max | threads first / last / max | calls | "
              "store errors | memory store keys / evictions | verdict |")
        print("|---|---|---|---|---|---|---|---|")
        flat_all = len(after) >= 2
        for pid, name in self.processes.items():
            series = {m: [s["by_pid"][pid][m] for s in after] for m in ("rss", "fds", "threads")}
            misses = []
            for m in ("rss", "fds"):
                ref = series[m][0]
                worst = max(series[m], key=lambda v: abs(v - ref))
                if abs(worst - ref) > TOLERANCE * ref:
                    misses.append(f"{m} {worst - ref:+d} ({(worst - ref) / ref:+.1%})")
            if any(v != series["threads"][0] for v in series["threads"]):
                misses.append(f"threads {series['threads'][0]} -> {sorted(set(series['threads']))}")
            flat_all = flat_all and not misses
            r = reports[pid]
            rss = series["rss"]
            cell = lambda v: "{} / {} / {}".format(*v)  # noqa: E731
            print(f"| {name} | {cell(f'{x / 1024:.1f}' for x in (rss[0], rss[-1], max(rss)))} | "
                  f"{cell((series['fds'][0], series['fds'][-1], max(series['fds'])))} | "
                  f"{cell((series['threads'][0], series['threads'][-1], max(series['threads'])))} | {r['calls']:,} | "
                  f"{r['store_errors']:,} | {r.get('memory_keys', '-')} / {r.get('memory_evictions', '-')} | "
                  f"{'flat' if not misses else 'NOT FLAT: ' + ', '.join(misses)} |")
        print()
        if len(after) < 2:
            print(f"verdict: FAILED: {len(after)} sample(s) after the warm-up; at least 2 are needed")
        else:
            print(f"verdict: {'flat' if flat_all else 'FAILED'}: {len(self.processes)} processes, {len(after)} samples "
                  f"after the warm-up, RSS and descriptors within {TOLERANCE:.0%} of the first, threads constant")
        return flat_all


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=600, help="how long (default 600)")
    parser.add_argument("--python", required=True, help="a Python with ratewarden installed")
    parser.add_argument("--node", default="node")
    parser.add_argument("--c-worker", required=True, help="bench/soak/worker.c, built")
    o = parser.parse_args()
    # 600 s: a sample every 10 s, warm-up and restart period 60 s. Shorter: a sample every 5 s, warm-up and restart
    # period a tenth of the run but at least 20 s (60 s: 9 samples after the warm-up, 3 restarts). 20 s: Node's young
    # generation (NODE_YOUNG_GENERATION) takes 10-15 s of work to be touched whole on a busy machine.
    o.interval = 10 if o.seconds >= 300 else 5
    o.warmup = max(20, o.seconds // 10 // o.interval * o.interval)
    o.restart_every = o.warmup
    if o.seconds < o.warmup + 2 * o.interval:
        parser.error(f"--seconds must be at least {o.warmup + 2 * o.interval}")
    return o


def main() -> int:
    soak = Soak(parse_args())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # runs the clean-up
    failed = True
    try:
        soak.start()
        soak.run()
        failed = False
    except Failure as e:
        print(f"verdict: FAILED: {e}", flush=True)
    finally:
        soak.cleanup(failed)
    return 1 if failed or not soak.verdicts() else 0


if __name__ == "__main__":
    sys.exit(main())
