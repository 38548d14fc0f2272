"""Reads the JSON lines of calls.py and http_bench.py (stdin) and prints the table, with the ratios of this run."""

from __future__ import annotations

import json
import sys
from typing import Dict

results: Dict[str, float] = {}  # µs per call, or requests/s
cpu: Dict[str, float] = {}  # HTTP: gunicorn's CPU µs per request
for line in sys.stdin:
    if line.startswith("{"):
        item = json.loads(line)
        results[item["name"]] = item["us"] if "us" in item else item["rps"]
        if "cpu_us" in item:
            cpu[item["name"]] = item["cpu_us"]


def fastest(prefix: str, suffix: str = "") -> "tuple[str, float]":
    name = min((n for n in results if n.startswith(prefix) and n.endswith(suffix)), key=results.__getitem__)
    return name.split(".")[2], results[name]


def row(what: str, ours: str, theirs: str, ratio: float, target: str) -> None:
    print(f"| {what} | {ours} | {theirs} | {ratio:.2f}x | {target} |")


print("| measurement | ratewarden | reference | ratio | target |")
print("|---|---|---|---|---|")
strategy, limits_mem = fastest("limits.memory.")
for call in ("hit", "allow"):
    us = results[f"rw.memory.{call}"]
    row(f"memory `{call}()`, 10k keys, µs/call", f"{us:.2f}", f"{limits_mem:.2f} (limits {strategy})",
        limits_mem / us, ">= 4x" if call == "hit" else "-")
ours, theirs = results["contended.rw"], results["contended.limits"]
row("memory `hit()` amid 4 busy threads, CPU µs/call", f"{ours:.2f}", f"{theirs:.2f} (limits fixed)", theirs / ours, "-")
for threads, target in ((1, ">= 1.5x"), (8, ">= 3x")):
    strategy, limits_redis = fastest("limits.redis.", f".{threads}")
    us = results[f"rw.redis.hit.{threads}"]
    row(f"Redis `hit()`, {threads} thread{'s' if threads > 1 else ''}, µs/call", f"{us:.1f}",
        f"{limits_redis:.1f} (limits {strategy})", limits_redis / us, target)
for server in ("sync", "gthread"):
    bare, bare_cpu = results[f"http.{server}.bare"], cpu[f"http.{server}.bare"]
    for store, target in (("memory", ">= 0.9x"), ("redis", ">= 0.8x")):
        ours, theirs = results[f"http.{server}.ratewarden.{store}"], results[f"http.{server}.flask-limiter.{store}"]
        row(f"Flask, gunicorn {server}, {store} store: req/s (bare {bare:.0f})", f"{ours:.0f}",
            f"{theirs:.0f} = {theirs / bare:.2f}x (Flask-Limiter)", ours / bare, target)
        ours_cpu, theirs_cpu = cpu[f"http.{server}.ratewarden.{store}"], cpu[f"http.{server}.flask-limiter.{store}"]
        print(f"| &nbsp; gunicorn CPU µs/request (bare {bare_cpu:.0f}), added | +{ours_cpu - bare_cpu:.0f} | "
              f"+{theirs_cpu - bare_cpu:.0f} (Flask-Limiter) | {bare_cpu / ours_cpu:.2f}x | |")
