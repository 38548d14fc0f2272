#!/usr/bin/env python3
"""An experiment (issue 16): could one prepared statement replace <table>_decide_one on a one-policy hit?

    python3 bench/postgres/forms.py            (ROUNDS, SECONDS_PER_RUN, CALLERS="1 8" in the environment)

pgbench -M prepared (generic plans, as the store's sessions) at each caller count, rounds interleaved, medians:
  upsert       the floor of bench/postgres/run.py: INSERT ... ON CONFLICT DO UPDATE SET n = n + 1 RETURNING n
  decide_one   the store's one-policy hit today: SELECT <table>_decide_one(...) (PL/pgSQL, read-first)
  one_stmt     the whole decision in one INSERT ... ON CONFLICT (key) DO UPDATE SET (...) = (SELECT ...) RETURNING,
               the algorithm an inlinable LANGUAGE sql function (below), the clock read in the SET after the row
               lock; PostgreSQL 15 has no RETURNING OLD, so the reply is stored in the row (a `reply` column) and a
               denial rewrites its row too (write-first)
for fixed_window and gcra on 100,000 keys with a limit that allows everything, and a denial flood (fixed_window,
limit 1, 1,000 keys: all but the first hits denied). The SQL functions here are a second copy of
core/src/algorithms/{fixed_window,gcra}.sql, written for this measurement only; they are checked against the
store's own functions on random inputs first. The bar (the brief of this experiment): one_stmt >= 0.85x the upsert
at 1 and 8 callers before it is worth a schema change and a write-first denial.
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECONDS = os.environ.get("SECONDS_PER_RUN", "3")
ROUNDS = int(os.environ.get("ROUNDS", "5"))
CALLERS = [int(c) for c in os.environ.get("CALLERS", "1 8").split()]
BAR = 0.85

# The table of the one-statement form: the store's, plus the reply of the row's last decision.
SETUP = """
CREATE UNLOGGED TABLE bench_counters (key text PRIMARY KEY, n bigint NOT NULL) WITH (fillfactor = 70);
CREATE SCHEMA rw_forms;
CREATE UNLOGGED TABLE rw_forms.limits (key bytea PRIMARY KEY, state bigint[], expires_at bigint NOT NULL,
  reply bigint[]) WITH (fillfactor = 70);
-- Inlined into the calling statement: one SELECT, not STRICT, not VOLATILE, RETURNS TABLE. The OFFSET 0 fences keep
-- each intermediate value one column instead of repeating its expression everywhere it is used (measured cheaper).
CREATE FUNCTION rw_forms.fixed_window(s bigint[], t_now bigint, lim bigint, period bigint, extra bigint, cost bigint,
    hit boolean)
RETURNS TABLE(state bigint[], allowed boolean, d_limit bigint, remaining bigint, reset_after bigint,
              retry_after bigint, used bigint, expires_at bigint)
LANGUAGE sql IMMUTABLE AS $$
  SELECT ARRAY[c.cnt, w.start], c.ok, lim, lim - c.cnt,
         CASE WHEN c.cnt > 0 THEN w.start + period - t_now ELSE 0 END,
         CASE WHEN c.ok THEN 0 ELSE w.start + period - t_now END,
         c.cnt, CASE WHEN c.cnt > 0 THEN w.start + period ELSE t_now END
  FROM (SELECT CASE WHEN v.fresh THEN 0 ELSE s[1] END AS cnt0, CASE WHEN v.fresh THEN t_now ELSE s[2] END AS start
        FROM (SELECT coalesce(s[1], 0) <= 0 OR t_now >= coalesce(s[2], 0) + period AS fresh OFFSET 0) v OFFSET 0) w,
       LATERAL (SELECT w.cnt0 + cost <= lim AS ok,
                       w.cnt0 + CASE WHEN w.cnt0 + cost <= lim AND hit THEN cost ELSE 0 END AS cnt OFFSET 0) c
$$;
CREATE FUNCTION rw_forms.gcra(s bigint[], t_now bigint, lim bigint, period bigint, extra bigint, cost bigint,
    hit boolean)
RETURNS TABLE(state bigint[], allowed boolean, d_limit bigint, remaining bigint, reset_after bigint,
              retry_after bigint, used bigint, expires_at bigint)
LANGUAGE sql IMMUTABLE AS $$
  SELECT ARRAY[b.tat], a.ok, extra, b.rem, b.tat - t_now,
         CASE WHEN a.ok THEN 0 ELSE a.nxt - t_now - a.tau END, extra - b.rem, b.tat
  FROM (SELECT v.t, v.tau, v.tat0, v.tat0 + cost * v.t AS nxt, v.tat0 + cost * v.t - t_now <= v.tau AS ok
        FROM (SELECT (period + lim - 1) / lim AS t, extra * ((period + lim - 1) / lim) AS tau,
                     greatest(coalesce(s[1], 0), t_now) AS tat0 OFFSET 0) v OFFSET 0) a,
       LATERAL (SELECT x.tat, greatest(0, (a.tau - (x.tat - t_now)) / a.t) AS rem
                FROM (SELECT CASE WHEN a.ok AND hit THEN a.nxt ELSE a.tat0 END AS tat) x) b
$$;
"""

# Random states, instants, limits and costs: the copies must decide as the store's functions do.
CHECK = """
SELECT count(*) FILTER (WHERE a IS DISTINCT FROM b) FROM (
  SELECT (SELECT row(d.*) FROM rw_forms.{algo}(s, t, lim, period, extra, cost, hit) d) AS a,
         (SELECT row(d.*) FROM ratewarden.rw1_{algo}(s, t, lim, period, extra, cost, hit) d) AS b
  FROM (SELECT CASE WHEN random() < 0.1 THEN NULL
                    WHEN '{algo}' = 'gcra' THEN ARRAY[(random() * 3000)::bigint]
                    ELSE ARRAY[(random() * 12)::bigint - 1, (random() * 3000)::bigint] END AS s,
               (random() * 3000)::bigint AS t, 1 + (random() * 10)::bigint AS lim,
               1 + (random() * 2000)::bigint AS period, 1 + (random() * 10)::bigint AS extra,
               (random() * 4)::bigint AS cost, random() < 0.8 AS hit
        FROM generate_series(1, 20000)) inputs) cases
"""

DECIDE_ONE = """\\set k random(0, {keys})
SELECT ratewarden.limits_decide_one(convert_to('{prefix}' || :k, 'UTF8'), '{algo}', {lim}, 3600000000, {extra}, 1,
  true, NULL);
"""

# test_now is NULL (the database's clock) as in a store without a test clock; grace is decide_one's grace minute.
CLOCK = """(SELECT x.db_now, coalesce(NULL::bigint, x.db_now) AS t_now,
                CASE WHEN NULL::bigint IS NULL THEN 0 ELSE 60000000 END AS grace
         FROM (SELECT ratewarden.rw1_clock() AS db_now OFFSET 0) x) c"""
ONE_STMT = """\\set k random(0, {keys})
INSERT INTO rw_forms.limits AS r (key, state, expires_at, reply)
SELECT convert_to('{prefix}' || :k, 'UTF8'), d.state, c.db_now + c.grace + d.expires_at - c.t_now,
       ARRAY[d.allowed::int, d.d_limit, d.remaining, d.reset_after, d.retry_after, d.used, 0]
  FROM {clock}, LATERAL rw_forms.{algo}(NULL, c.t_now, {lim}, 3600000000, {extra}, 1, true) d
ON CONFLICT (key) DO UPDATE SET (state, expires_at, reply) = (
  SELECT d.state, c.db_now + c.grace + d.expires_at - c.t_now,
         ARRAY[d.allowed::int, d.d_limit, d.remaining, d.reset_after, d.retry_after, d.used, 0]
    FROM {clock}, LATERAL rw_forms.{algo}(r.state, c.t_now, {lim}, 3600000000, {extra}, 1, true) d)
RETURNING reply;
"""
ALLOW = {"keys": 99999, "lim": 1000000000, "extra": 1000000000}
DENY = {"keys": 999, "lim": 1, "extra": 0}
FORMS = {
    "upsert": "\\set k random(0, 99999)\nINSERT INTO bench_counters AS c (key, n) VALUES ('user' || :k, 1)\n"
              "  ON CONFLICT (key) DO UPDATE SET n = c.n + 1 RETURNING n;\n",
    "fixed_window decide_one": DECIDE_ONE.format(algo="fixed_window", prefix="f", **ALLOW),
    "fixed_window one_stmt": ONE_STMT.format(algo="fixed_window", prefix="f", clock=CLOCK, **ALLOW),
    "gcra decide_one": DECIDE_ONE.format(algo="gcra", prefix="g", **ALLOW),
    "gcra one_stmt": ONE_STMT.format(algo="gcra", prefix="g", clock=CLOCK, **ALLOW),
    "denials decide_one": DECIDE_ONE.format(algo="fixed_window", prefix="d", **DENY),
    "denials one_stmt": ONE_STMT.format(algo="fixed_window", prefix="d", clock=CLOCK, **DENY),
}


def main() -> int:
    launcher = subprocess.Popen([sys.executable, str(ROOT / "tests/servers/launch.py"), "--postgres"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        ready = json.loads(launcher.stdout.readline())  # type: ignore[union-attr]
        if not ready["ok"]:
            print("launch.py:", ready["error"], file=sys.stderr)
            return 1
        port = str(ready["nodes"][0]["port"])
        bin_dir = sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench"))[-1].parent
        conn = ["-h", "127.0.0.1", "-p", port, "-U", "postgres"]

        def psql(sql: str) -> str:
            return subprocess.run([str(bin_dir / "psql"), "-qAt", *conn, "-d", "postgres", "-v", "ON_ERROR_STOP=1"],
                                  input=sql, check=True, capture_output=True, text=True).stdout.strip()

        psql(subprocess.run([str(ROOT / "scripts/postgres_schema.sh")], check=True, capture_output=True,
                            text=True).stdout)
        psql(SETUP)
        for algo in ("fixed_window", "gcra"):
            wrong = int(psql(CHECK.format(algo=algo)))
            print(f"{algo}: the SQL copy and rw1_{algo} disagree on {wrong} of 20000 random cases")
            if wrong:
                return 1
        folder = Path(tempfile.mkdtemp(prefix="rw-forms-"))
        scripts = {}
        for i, (name, text) in enumerate(FORMS.items()):
            scripts[name] = folder / f"{i}.sql"
            scripts[name].write_text(text)
        env = dict(os.environ, PGOPTIONS="-c plan_cache_mode=force_generic_plan")
        tps = {(c, name): [] for c in CALLERS for name in FORMS}
        for r in range(ROUNDS):
            for c in CALLERS:
                for name in FORMS:
                    out = subprocess.run([str(bin_dir / "pgbench"), "-n", "-M", "prepared", *conn, "-c", str(c),
                                          "-j", str(min(c, 2)), "-T", SECONDS, "-f", str(scripts[name]), "postgres"],
                                         check=True, capture_output=True, text=True, env=env)
                    tps[(c, name)].append(float(re.search(r"tps = ([0-9.]+)", out.stdout).group(1)))  # type: ignore
            print(f"round {r + 1}/{ROUNDS} done", file=sys.stderr)
    finally:
        launcher.stdin.close()  # type: ignore[union-attr]
        launcher.wait()
    print(f"one-policy hit forms, pgbench transactions/s (median of {ROUNDS} interleaved rounds of {SECONDS} s); "
          f"ratio to the upsert floor, bar {BAR} for one_stmt")
    print(f"{'form':>24} " + " ".join(f"{f'{c} caller(s)':>14} {'ratio':>6}" for c in CALLERS))
    for name in FORMS:
        cells = []
        for c in CALLERS:
            m = statistics.median(tps[(c, name)])
            cells.append(f"{m:>14.0f} {m / statistics.median(tps[(c, 'upsert')]):>6.2f}")
        print(f"{name:>24} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
