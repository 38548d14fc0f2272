#!/usr/bin/env python3
"""The PostgreSQL store's throughput beside its floor and a peer, in one run (bench/postgres/run.sh builds and runs it).

At 1, 8 and 32 concurrent callers, each on random keys of 100,000 with a limit that allows everything:
  ratewarden   postgres_bench: synchronous callers on one store (its default pool: up to 8 pipelined connections)
  floor        pgbench -M prepared running one minimal counter upsert (INSERT ... ON CONFLICT DO UPDATE ...
               RETURNING) on an UNLOGGED table like ours, with one connection per caller
  rlf          rate-limiter-flexible's RateLimiterPostgres with `pg` (a pool of one connection per caller)
Rounds are interleaved and each figure is the median of ROUNDS; the ratios compare figures of this run only.
Targets (issue 16): ratewarden >= 0.8x the floor and >= 1.2x rate-limiter-flexible.
Beside them, the floors of our own path (no target; where the time goes): pgbench -M prepared calling the store's
single-policy function (<table>_decide_one) directly, and postgres_libpq_bench, a bare blocking PQexecPrepared loop
of the same call with one connection per caller (our client's own cost is the gap between it and ratewarden).
Then the storage: a flood of distinct keys (8 callers, a 1/2s limit: every row expires 2 s after its hit) with the
row count, table and index size right after it and once the sweep has run; and a hot key (8 callers on one key) with
the share of its updates that were HOT (no index entry, pruned in place).
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))  # bench/servers.py: the tests' servers
from servers import PostgresServer  # noqa: E402

SECONDS = float(os.environ.get("SECONDS_PER_RUN", "3"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
CALLERS = [1, 8, 32]

UPSERT = """\\set k random(0, 99999)
INSERT INTO bench_counters AS c (key, n) VALUES ('user' || :k, 1)
  ON CONFLICT (key) DO UPDATE SET n = c.n + 1 RETURNING n;
"""
OURS_FN = """\\set k random(0, 99999)
SELECT ratewarden.limits_decide_one(convert_to('user' || :k, 'UTF8'), 'fixed_window', 1000000000, 3600000000, 0, 1,
  true, NULL);
"""


def psql(bin_dir: Path, port: int, sql: str) -> None:
    subprocess.run([str(bin_dir / "psql"), "-q", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d",
                    "postgres", "-v", "ON_ERROR_STOP=1", "-c", sql], check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    bench_binary = Path(sys.argv[1])
    libpq_binary = Path(sys.argv[2])
    try:
        server = PostgresServer()  # gone with this process, however it ends
    except RuntimeError as error:
        print(error, file=sys.stderr)
        return 1
    port = server.port
    url = server.url + "?timeout=10s"
    bin_dir = sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench"))[-1].parent
    psql(bin_dir, port, "CREATE UNLOGGED TABLE bench_counters (key text PRIMARY KEY, n bigint NOT NULL) "
                        "WITH (fillfactor = 70)")
    script = Path(tempfile.mkdtemp(prefix="rw-pgbench-")) / "upsert.sql"
    script.write_text(UPSERT)
    ours_fn_script = script.with_name("decide_one.sql")
    ours_fn_script.write_text(OURS_FN)

    def ours(callers: int) -> float:
        out = subprocess.run([str(bench_binary), url, str(callers), str(SECONDS)], check=True, capture_output=True,
                             text=True)
        return float(out.stdout.strip())

    def pgbench(callers: int, path: Path) -> float:
        out = subprocess.run([str(bin_dir / "pgbench"), "-n", "-M", "prepared", "-h", "127.0.0.1", "-p", str(port),
                              "-U", "postgres", "-c", str(callers), "-j", str(min(callers, 2)), "-T",
                              str(int(SECONDS)), "-f", str(path), "postgres"], check=True, capture_output=True,
                             text=True)
        return float(re.search(r"tps = ([0-9.]+)", out.stdout).group(1))  # type: ignore[union-attr]

    def floor(callers: int) -> float:
        return pgbench(callers, script)

    def ours_fn(callers: int) -> float:
        return pgbench(callers, ours_fn_script)

    def libpq(callers: int) -> float:
        conninfo = f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
        out = subprocess.run([str(libpq_binary), conninfo, str(callers), str(SECONDS)], check=True,
                             capture_output=True, text=True)
        return float(out.stdout.strip())

    def rlf(callers: int) -> float:
        out = subprocess.run(["node", str(ROOT / "bench/postgres/rlf.js"), str(port), str(callers), str(SECONDS)],
                             check=True, capture_output=True, text=True, cwd=ROOT)
        return float(out.stdout.strip())

    def query(sql: str) -> str:
        return subprocess.run([str(bin_dir / "psql"), "-At", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                               "-d", "postgres", "-c", sql], check=True, capture_output=True, text=True).stdout.strip()

    def storage(table: str) -> str:
        return query(f"SELECT count(*) || ' rows, table ' || pg_size_pretty(pg_relation_size('{table}')) || ', index ' "
                     f"|| pg_size_pretty(pg_indexes_size('{table}')) FROM {table}")

    results = {c: {"ours": [], "floor": [], "rlf": [], "ours_fn": [], "libpq": []} for c in CALLERS}
    try:
        for r in range(ROUNDS):
            for c in CALLERS:
                # ours first: its first call creates the schema the two floors of our own path call.
                for name, run in (("ours", ours), ("floor", floor), ("rlf", rlf), ("ours_fn", ours_fn),
                                  ("libpq", libpq)):
                    results[c][name].append(run(c))
            print(f"round {r + 1}/{ROUNDS} done", file=sys.stderr)
        flood_url = server.url + "?timeout=10s&table=flood"
        flood = subprocess.run([str(bench_binary), flood_url, "8", "5", "1/2s", "1000000000"], check=True,
                               capture_output=True, text=True)
        after_flood = storage("ratewarden.flood")
        # The sweep runs in the processes that use the store: one caller on one key keeps one running for 6 s.
        subprocess.run([str(bench_binary), flood_url, "1", "6", "1/2s", "1"], check=True, capture_output=True)
        after_sweep = storage("ratewarden.flood")
        hot_url = server.url + "?timeout=10s&table=hot"
        hot = subprocess.run([str(bench_binary), hot_url, "8", "3", "1000000000/hour", "1"], check=True,
                             capture_output=True, text=True)
        subprocess.run(["sleep", "1"])  # the backends are gone: their statistics are flushed
        hot_stats = query("SELECT n_tup_upd || ' updates, ' || n_tup_hot_upd || ' HOT (' || "
                          "round(100.0 * n_tup_hot_upd / greatest(n_tup_upd, 1), 1) || '%), table ' || "
                          "pg_size_pretty(pg_relation_size(relid)) FROM pg_stat_user_tables "
                          "WHERE relid = 'ratewarden.hot'::regclass")
    finally:
        server.close()
    print(f"PostgreSQL store, decisions/s (median of {ROUNDS} interleaved rounds of {SECONDS:g} s)")
    print(f"{'callers':>7} {'ratewarden':>11} {'pgbench floor':>14} {'ratio':>6} {'target':>7} {'rlf':>9} "
          f"{'ratio':>6} {'target':>7}")
    for c in CALLERS:
        m = {k: statistics.median(v) for k, v in results[c].items()}
        vs_floor, vs_rlf = m["ours"] / m["floor"], m["ours"] / m["rlf"]
        print(f"{c:>7} {m['ours']:>11.0f} {m['floor']:>14.0f} {vs_floor:>6.2f} {'>=0.8':>7} {m['rlf']:>9.0f} "
              f"{vs_rlf:>6.2f} {'>=1.2':>7}   {'' if vs_floor >= 0.8 else 'MISS floor '}"
              f"{'' if vs_rlf >= 1.2 else 'MISS rlf'}")
    print("floors of our own path, decisions/s (no target): pgbench calling <table>_decide_one; a bare libpq loop")
    print(f"{'callers':>7} {'ratewarden':>11} {'pgbench fn':>11} {'ratio':>6} {'libpq loop':>11} {'ratio':>6}")
    for c in CALLERS:
        m = {k: statistics.median(v) for k, v in results[c].items()}
        print(f"{c:>7} {m['ours']:>11.0f} {m['ours_fn']:>11.0f} {m['ours'] / m['ours_fn']:>6.2f} {m['libpq']:>11.0f} "
              f"{m['ours'] / m['libpq']:>6.2f}")
    print(f"flood of distinct keys, 8 callers x 5 s ({float(flood.stdout):.0f} decisions/s), 1/2s: {after_flood}; "
          f"after the sweep: {after_sweep}")
    print(f"hot key, 8 callers x 3 s ({float(hot.stdout):.0f} decisions/s): {hot_stats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
