#!/usr/bin/env python3
"""Draws OUT.png from the run outage.py wrote (OUT.csv: one row per scrape; OUT.json: the run's settings, when Redis
went down and came back, the totals), and writes its caption, every number of which is computed here from those two
files. With --doc FILE, the caption and the image link replace what stands between the chart markers of FILE
(docs/observability.md); without, the caption is printed.

    chart.py OUT [--doc docs/observability.md]
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

BEGIN = "<!-- chart: begin (written by bench/observability/chart.py from the run's CSV and JSON: do not edit) -->"
END = "<!-- chart: end -->"

Rows = List[Dict[str, float]]


def load(out: Path) -> Tuple[Rows, dict]:
    with open(f"{out}.csv", newline="") as f:
        rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return rows, json.loads(Path(f"{out}.json").read_text())


def column(rows: Rows, *names: str) -> List[float]:
    return [sum(row[n] for n in names) for row in rows]


WINDOW = 2  # scrapes: rates over the last second at 0.5 s scrapes (Prometheus' rate() over [1s]), which keeps the
# 1-second windows of the limit from beating against the scrapes


def span(rows: Rows, i: int) -> int:
    """The scrape the window of scrape i starts at."""
    return max(0, i - WINDOW)


def rates(rows: Rows, *names: str) -> List[float]:
    """Per second over the window ending at each scrape but the first."""
    values = column(rows, *names)
    return [(values[i] - values[span(rows, i)]) / (rows[i]["t_s"] - rows[span(rows, i)]["t_s"])
            for i in range(1, len(rows))]


def means_ms(rows: Rows, outcome: str) -> List[float]:
    """The mean duration of the store calls of `outcome` made in the window ending at each scrape but the first, in
    ms (NaN: none)."""
    count = column(rows, f"store_calls_{outcome}")
    total = column(rows, f"store_calls_{outcome}_seconds")
    out = []
    for i in range(1, len(rows)):
        n = count[i] - count[span(rows, i)]
        out.append((total[i] - total[span(rows, i)]) / n * 1000 if n > 0 else math.nan)
    return out


def between(rows: Rows, start: float, end: float) -> Tuple[Dict[str, float], Dict[str, float]]:
    """The first scrape at or after `start` and the last at or before `end`."""
    first = next(r for r in rows if r["t_s"] >= start)
    last = [r for r in rows if r["t_s"] <= end][-1]
    return first, last


def phase_rate(rows: Rows, start: float, end: float, *names: str) -> float:
    a, b = between(rows, start, end)
    return sum(b[n] - a[n] for n in names) / (b["t_s"] - a["t_s"])


def phase_delta(rows: Rows, start: float, end: float, *names: str) -> int:
    a, b = between(rows, start, end)
    return int(sum(b[n] - a[n] for n in names))


def phase_mean_ms(rows: Rows, start: float, end: float, outcome: str) -> float:
    a, b = between(rows, start, end)
    n = b[f"store_calls_{outcome}"] - a[f"store_calls_{outcome}"]
    return (b[f"store_calls_{outcome}_seconds"] - a[f"store_calls_{outcome}_seconds"]) / n * 1000 if n else math.nan


def outage(meta: dict) -> Tuple[float, float]:
    """The span the caption calls "while Redis was down": from one scrape interval after the kill (the requests in
    flight at the kill have been answered) to the restart."""
    return meta["redis"]["killed_at_s"] + meta["settings"]["scrape_interval_s"], meta["redis"]["restart_at_s"]


def fmt(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 10 else f"{x:.1f}"


def caption(rows: Rows, meta: dict, image: str) -> str:
    s, r, t = meta["settings"], meta["redis"], meta["totals"]
    down, back, stop = r["killed_at_s"], r["answers_again_at_s"], meta["load_stopped_at_s"]
    first_load = next(row["t_s"] for row in rows if row["sent"] > 0)
    before = (first_load + 1, down)  # from the first full second of load
    during = outage(meta)
    after = (back + 1, stop)
    allowed, denied = ("decisions_allowed",), ("decisions_denied",)
    errors = ("store_errors_unavailable", "store_errors_timeout", "store_errors_error")

    def r3(names: Tuple[str, ...]) -> List[str]:
        return [fmt(phase_rate(rows, *p, *names)) for p in (before, during, after)]

    a3, d3, e3 = r3(allowed), r3(denied), r3(errors)
    span_from, span_to = (row["t_s"] for row in between(rows, *during))
    open_rows = [row for row in rows if span_from <= row["t_s"] <= span_to]
    open_share = sum(1 for row in open_rows if row["circuit_open"] > 0) / max(1, len(open_rows))
    both_open = sum(1 for row in open_rows if row["circuit_open"] >= s["workers"]) / max(1, len(open_rows))
    resumed = next((rows[i]["t_s"] for i in range(1, len(rows))
                    if rows[i]["t_s"] > back and rows[i]["decisions_allowed"] > rows[i - 1]["decisions_allowed"]),
                   math.nan)
    last_open = max((i for i, row in enumerate(rows) if row["circuit_open"] > 0), default=None)
    closed = rows[last_open + 1]["t_s"] if last_open is not None and last_open + 1 < len(rows) else math.nan
    users_ok = phase_delta(rows, *during, "users_passed")
    users_429 = phase_delta(rows, *during, "users_429")
    refused_outage = phase_delta(rows, *during, "users_429", "attacker_429")
    decided_outage = phase_delta(rows, *during, "decisions_allowed", "decisions_denied")
    fallbacks_outage = phase_delta(rows, *during, "fallback_decisions")
    errors_outage = phase_delta(rows, *during, *errors)
    ok_ms = phase_mean_ms(rows, before[0], down, "ok")
    fail_ms = phase_mean_ms(rows, *during, "unavailable")
    c = meta["checks"]
    sums = (f"every one a decision: {t['decisions_allowed']} allowed + {t['decisions_denied']} denied = "
            f"{c['allowed_plus_denied']}, the requests sent ({t['fallback_decisions']} of them fallbacks, "
            f"{t['store_errors']} store errors)"
            if c["decisions_equal_requests"] else
            f"**they do not add up**: {t['decisions_allowed']} allowed + {t['decisions_denied']} denied = "
            f"{c['allowed_plus_denied']}, but {t['requests_sent']} requests were sent")
    passed = t["responses"]["users_passed"] + t["responses"]["attacker_passed"]
    passed_check = ("as many as the responses the view gave" if c["allowed_equals_passed_responses"]
                    else f"**but the view answered {passed} requests**")
    users = ", ".join(s["users"])
    kinds: Dict[str, List[str]] = {}
    for event in meta["events"]:
        kinds.setdefault(event["event"], []).append(f"{event['t_s']:.2f}")
    told = "; ".join(f"{kind} at {', '.join(times)} s" for kind, times in kinds.items()) or "none"
    in_flight = len(s["users"]) + s["attacker_connections"]  # at most one request per connection
    files = f"[CSV]({Path(image).with_suffix('.csv')}), [JSON]({Path(image).with_suffix('.json')})"
    return "\n".join([
        f"![A login flood with Redis killed for {back - down:.0f} s: decisions, store errors, circuit, store call "
        f"duration and what legitimate users got, per second]({image})",
        "",
        f"*{s['route']} limited to {s['limit']}, `on_store_error=\"{s['on_store_error']}\"` (fail closed), "
        f"gunicorn with {s['workers']} workers on one Redis; {len(s['users'])} users ({users}) log in "
        f"{s['user_rate_per_s']:g} time a second each while an attacker sends {s['attack_rate_per_s']:g} requests a "
        f"second for `{s['attacked_username']}`. Both workers' `/metrics` scraped every "
        f"{s['scrape_interval_s']:g} s and summed; redis-server SIGKILLed at {down:.1f} s and answering again at "
        f"{back:.1f} s (grey). Run of {meta['date_utc']} UTC, tree {meta['versions']['tree']}, "
        f"{meta['versions']['cpus']} CPUs ({files}).*",
        "",
        f"- A second, before the kill / between the scrapes at {span_from:.1f} s and {span_to:.1f} s (Redis down) / "
        f"after Redis answered: allowed decisions {a3[0]} / {a3[1]} / {a3[2]}; denied {d3[0]} / {d3[1]} / {d3[2]}; "
        f"store errors {e3[0]} / {e3[1]} / {e3[2]}.",
        f"- Between those scrapes the app answered {refused_outage} requests with 429; "
        f"`ratewarden_decisions_total` grew by {decided_outage}, `ratewarden_fallback_decisions_total` by "
        f"{fallbacks_outage} (the refusals `on_store_error` gave) and `ratewarden_store_errors_total` by "
        f"{errors_outage}" + (" (the counts differ by requests in flight at a scrape)"
                              if len({refused_outage, fallbacks_outage, errors_outage}) > 1
                              and max(refused_outage, fallbacks_outage, errors_outage)
                              - min(refused_outage, fallbacks_outage, errors_outage) <= in_flight else "") + ".",
        f"- The circuit was open in at least one worker at {open_share:.0%} of those scrapes (every "
        f"worker's at {both_open:.0%}; {t['circuit_openings']} openings in the run); a failed store call "
        f"took {fail_ms * 1000:.0f} µs on average, an answered one {ok_ms:.2f} ms before the kill.",
        f"- The legitimate users got {users_429} refusals and {users_ok} logins between those scrapes"
        + (": fail closed locked them out with the attacker." if users_ok == 0 else "."),
        f"- The `ratewarden` logger's events ([Events](#events)), both workers': {told}.",
        f"- Allowed decisions were counted again by the scrape at {resumed:.1f} s, and no circuit was open from the "
        f"scrape at {closed:.1f} s on.",
        f"- In all: {t['requests_sent']} requests sent; {sums}; {t['decisions_allowed']} allowed, {passed_check}.",
    ])


def draw(rows: Rows, meta: dict, png: Path) -> None:
    edges = [row["t_s"] for row in rows]
    times = edges[1:]
    r = meta["redis"]
    down, back = r["killed_at_s"], r["answers_again_at_s"]
    fig, axes = plt.subplots(4, 1, figsize=(10, 10), sharex=True, gridspec_kw={"height_ratios": [3.2, 0.9, 1.6, 1.8]})
    decisions, circuit, duration, users = axes
    for ax in axes:
        ax.axvspan(down, back, color="0.85", zorder=0)
        ax.grid(True, color="0.9", linewidth=0.6)
        ax.set_axisbelow(True)

    s = meta["settings"]
    decisions.plot(times, rates(rows, "decisions_denied"), color="tab:red", linewidth=1.6,
                     label='denied  (decisions_total{outcome="denied"})')
    decisions.plot(times, rates(rows, "decisions_allowed"), color="tab:green", linewidth=1.6,
                     label='allowed  (decisions_total{outcome="allowed"})')
    decisions.plot(times, rates(rows, "store_errors_unavailable", "store_errors_timeout", "store_errors_error"),
                     color="tab:purple", linewidth=1.6, linestyle="--", label="store errors  (store_errors_total)")
    decisions.plot(times, rates(rows, "sent"), color="black", linewidth=0.8, linestyle=":",
                   label="requests sent  (the load generator's count)")
    decisions.set_ylabel("per second (over the last 1 s)")
    during = outage(meta)
    first, last = between(rows, *during)
    refused = phase_delta(rows, *during, "users_429", "attacker_429")
    decided = phase_delta(rows, *during, "decisions_allowed", "decisions_denied")
    errors = phase_delta(rows, *during, "store_errors_unavailable", "store_errors_timeout", "store_errors_error")
    note = (f"{first['t_s']:.1f} s to {last['t_s']:.1f} s:\n{refused} responses 429\n{errors} store errors\n"
            f"{decided} decision{'s' * (decided != 1)} counted")
    decisions.text((down + back) / 2, 0.45, note, transform=decisions.get_xaxis_transform(), ha="center",
                   va="center", fontsize=8.5, bbox={"facecolor": "white", "edgecolor": "0.6", "alpha": 0.9})
    decisions.set_title(f"{s['route']}, {s['limit']}, on_store_error=\"{s['on_store_error']}\": "
                        f"{s['workers']} gunicorn workers' /metrics, summed", fontsize=10, loc="left")
    handles, labels = decisions.get_legend_handles_labels()
    handles.append(Patch(color="0.85", label="redis-server killed"))
    decisions.legend(handles=handles, loc="center left", bbox_to_anchor=(0.005, 0.45), fontsize=8.5, framealpha=0.95)
    decisions.set_ylim(0, None)

    circuit.fill_between(edges, [row["circuit_open"] for row in rows], step="post", color="tab:orange", alpha=0.7,
                         linewidth=0)
    circuit.set_ylim(0, s["workers"] + 0.2)
    circuit.set_yticks(range(s["workers"] + 1))
    circuit.set_ylabel("workers", fontsize=9)
    circuit.set_title("workers whose circuit to Redis is open  (ratewarden_circuit_open, as each scrape saw it)",
                      fontsize=9, loc="left")

    duration.plot(times, means_ms(rows, "ok"), color="tab:blue", linewidth=1.4, label='outcome="ok"')
    duration.plot(times, means_ms(rows, "unavailable"), color="tab:purple", linewidth=1.4,
                    label='outcome="unavailable"')
    duration.set_yscale("log")
    duration.set_ylabel("ms", fontsize=9)
    duration.set_title("store call duration, mean over the last 1 s  (store_call_duration_seconds: Δsum / Δcount)",
                       fontsize=9, loc="left")
    duration.legend(loc="upper left", fontsize=8, ncol=2)

    users.plot(times, rates(rows, "users_passed"), color="tab:green", linewidth=1.4, label="logged in (200)")
    users.plot(times, rates(rows, "users_429"), color="tab:red", linewidth=1.4, label="refused (429)")
    users.set_ylim(0, len(s["users"]) * s["user_rate_per_s"] * 1.8)
    users.set_ylabel("per second (last 1 s)", fontsize=9)
    users.set_title(f"the {len(s['users'])} legitimate users' responses, as the load generator received them "
                    "(not from /metrics)", fontsize=9, loc="left")
    users.legend(loc="upper left", fontsize=8, ncol=2)
    users.set_xlabel("seconds since the load started")
    users.set_xlim(edges[0], edges[-1])

    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="OUT of OUT.csv and OUT.json; the chart goes to OUT.png")
    parser.add_argument("--doc", type=Path, help="the Markdown file whose chart markers get the image and caption")
    args = parser.parse_args()
    rows, meta = load(args.out)
    png = Path(f"{args.out}.png")
    draw(rows, meta, png)
    print(f"chart.py: wrote {png}", file=sys.stderr)
    if args.doc is None:
        print(caption(rows, meta, png.name))
        return 0
    image = os.path.relpath(png, args.doc.parent)
    text = args.doc.read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"chart.py: {args.doc} has no chart markers ({BEGIN} ... {END})")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    args.doc.write_text(f"{head}{BEGIN}\n{caption(rows, meta, image)}\n{END}{tail}")
    print(f"chart.py: wrote the chart's caption in {args.doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
