#!/usr/bin/env python3
"""bench/server/run.sh's table, from the JSON lines of bench/server/round.py (one per round, read on stdin).

    table.py           the table: each figure of ours beside the peer's, their ratio and issue 37's target
    table.py --line    one line for the last round read (the progress lines of rounds.sh)

Round i of one of our servers is paired with round i of the peer in the same case and concurrency (they ran one
after the other); a ratio is the median of those per-round ratios, and the columns are each side's median. The
peer is envoyproxy/ratelimit on Redis throughout. Standard library only.
"""
from __future__ import annotations

import json
import statistics
import sys
from typing import Callable, Dict, List, Optional, Tuple

Row = Tuple[str, str, str, str, str, str, str]
Figure = Callable[[dict], float]

SIDES = {"ours_redis": "Redis", "ours_memory": "memory://", "ours_local_first": "Redis ?mode=local_first"}


def cpu_per_decision(r: dict) -> float:
    return 1e6 * r["server_cpu_s"] / r["ok"]


def redis_cpu_per_decision(r: dict) -> float:
    return 1e6 * r["redis_cpu_s"] / r["ok"]


def ghz_cpu_per_call(r: dict) -> float:
    return 1e6 * r["ghz_cpu_s"] / max(r["ok"] + r["errors"], 1)


def line(r: dict) -> str:
    return (f"   {r['case']} c={r['c']} {r['side']:<16} round {r['round']}: {r['rps']:8,.0f} calls/s, "
            f"p99 {r['p99_ms']:6.2f} ms, {cpu_per_decision(r):6.1f} us server CPU per decision, "
            f"RSS {r['rss_kb'] / 1024:5.1f} MiB, ghz {ghz_cpu_per_call(r):5.1f} us CPU per call"
            + (f", {r['errors']} errors: {r['error_kinds']}" if r["errors"] else ""))


def main() -> int:
    results = [json.loads(text) for text in sys.stdin if text.strip()]
    if sys.argv[1:] == ["--line"]:
        print(line(results[-1]))
        return 0
    runs: Dict[Tuple[str, int, str], List[dict]] = {}
    for r in results:
        if r["ok"] == 0:
            sys.exit(f"table.py: no OK response in {r['case']} c={r['c']} {r['side']} round {r['round']}: "
                     f"{r['error_kinds']}")
        runs.setdefault((r["case"], r["c"], r["side"]), []).append(r)

    rows: List[Row] = []
    verdicts: List[bool] = []

    def row(what: str, case: str, c: int, side: str, figure: Figure, unit: str,
            target: Optional[Tuple[float, str]] = None) -> None:
        ours = sorted(runs[(case, c, side)], key=lambda r: r["round"])
        peer = {r["round"]: r for r in runs[(case, c, "peer")]}
        pairs = [(figure(o), figure(peer[o["round"]])) for o in ours if o["round"] in peer]
        ratios = [o / p for o, p in pairs]
        ratio = statistics.median(ratios)
        if target is None:
            goal, verdict = "(information)", ""
        else:
            goal = f"<= {target[1]}"
            verdicts.append(ratio <= target[0])
            verdict = "PASS" if verdicts[-1] else "MISS"
        rows.append((what, fmt(statistics.median(o for o, _ in pairs), unit),
                     fmt(statistics.median(p for _, p in pairs), unit), f"{ratio:.3f}", goal, verdict,
                     " ".join(f"{x:.3f}" for x in ratios)))

    concurrencies = sorted({c for _, c, _ in runs})
    for c in concurrencies:
        if ("keys", c, "ours_redis") in runs:
            rows.append((f"1,000 keys never denied, c={c}",) + ("",) * 6)
            row("  CPU per decision, both on Redis", "keys", c, "ours_redis", cpu_per_decision, "us", (1 / 3, "1/3"))
            row("  p99 latency, both on Redis", "keys", c, "ours_redis", lambda r: r["p99_ms"], "ms", (0.5, "0.5"))
            row("  RSS under load, both on Redis", "keys", c, "ours_redis", lambda r: r["rss_kb"], "KiB", (1, "1"))
            row("  throughput, both on Redis", "keys", c, "ours_redis", lambda r: r["rps"], "/s")
            row("  p50 latency, both on Redis", "keys", c, "ours_redis", lambda r: r["p50_ms"], "ms")
            row("  Redis's own CPU per decision", "keys", c, "ours_redis", redis_cpu_per_decision, "us")
        if ("keys", c, "ours_memory") in runs:
            row("  CPU per decision, ours memory://", "keys", c, "ours_memory", cpu_per_decision, "us",
                (1 / 10, "1/10"))
            row("  RSS under load, ours memory://", "keys", c, "ours_memory", lambda r: r["rss_kb"], "KiB", (1, "1"))
            row("  throughput, ours memory://", "keys", c, "ours_memory", lambda r: r["rps"], "/s")
            row("  p99 latency, ours memory://", "keys", c, "ours_memory", lambda r: r["p99_ms"], "ms")
    for c in concurrencies:
        if ("flood", c, "ours_local_first") in runs:
            rows.append((f"one key flooded, all denied, c={c}",) + ("",) * 6)
            row("  CPU per denial, ours local_first", "flood", c, "ours_local_first", cpu_per_decision, "us",
                (1 / 10, "1/10"))
            row("  RSS under load, ours local_first", "flood", c, "ours_local_first", lambda r: r["rss_kb"], "KiB",
                (1, "1"))
            row("  throughput, ours local_first", "flood", c, "ours_local_first", lambda r: r["rps"], "/s")
            row("  p99 latency, ours local_first", "flood", c, "ours_local_first", lambda r: r["p99_ms"], "ms")
            row("  Redis's own CPU per denial", "flood", c, "ours_local_first", redis_cpu_per_decision, "us")
    for c in concurrencies:
        if ("no_rule", c, "ours_memory") in runs:
            rows.append((f"no rule matched (no store call: each server's floor), c={c}",) + ("",) * 6)
            row("  CPU per call", "no_rule", c, "ours_memory", cpu_per_decision, "us")
            row("  throughput", "no_rule", c, "ours_memory", lambda r: r["rps"], "/s")

    ghz = [ghz_cpu_per_call(r) for r in results]
    rounds = max(r["round"] for r in results)
    seconds = statistics.median(r["seconds"] for r in results)
    print(f"ratewarden-server against envoyproxy/ratelimit (the peer, on Redis), ghz over 4 connections, "
          f"{rounds} interleaved rounds of {seconds:.0f} s per side and case; medians. CPU: each server's own "
          f"(utime + stime), per OK response.")
    header = ("figure", "ours", "peer", "ratio", "target", "", "per round")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(cell.ljust(w) if i in (0, 4, 5, 6) else cell.rjust(w)
                        for i, (cell, w) in enumerate(zip(r, widths))).rstrip())
    print(f"ghz's own CPU per call: {statistics.median(ghz):.0f} us (median of all rounds, {min(ghz):.0f}-"
          f"{max(ghz):.0f}): on 2 cores it, not the servers, bounds the throughput.")
    print(f"{sum(verdicts)} of {len(verdicts)} targets met.")
    return 0


def fmt(value: float, unit: str) -> str:
    if unit == "us":
        return f"{value:,.1f} us"
    if unit == "ms":
        return f"{value:,.2f} ms"
    if unit == "KiB":
        return f"{value / 1024:,.1f} MiB"
    return f"{value:,.0f}/s"


if __name__ == "__main__":
    sys.exit(main())
