#!/usr/bin/env bash
# One command: the PostgreSQL store against pgbench's minimal upsert and rate-limiter-flexible (bench/postgres/run.py
# says what is measured). Builds postgres_bench and postgres_libpq_bench (Release) in build-bench/, installs npm's
# packages without building the addon (the peer needs only `pg` and rate-limiter-flexible), starts its own PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/setup.sh
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DRATEWARDEN_BUILD_BENCH=ON >/dev/null
cmake --build build-bench --target postgres_bench postgres_libpq_bench >/dev/null
[ -d node_modules/pg ] && [ -d node_modules/rate-limiter-flexible ] || npm ci --ignore-scripts --no-progress >/dev/null
exec python3 bench/postgres/run.py build-bench/bench/postgres_bench build-bench/bench/postgres_libpq_bench
