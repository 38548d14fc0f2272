#!/usr/bin/env bash
# The Python benchmark, one command: ratewarden against limits and Flask-Limiter (current releases from PyPI,
# installed into a benchmark-only venv), in one run, printing one table with the ratios of that run.
#   - calls.py: hit()/allow() on the memory store over 10k keys; hit() on Redis with 1 and 8 threads.
#   - http_bench.py: Flask under gunicorn (sync and gthread workers) and wrk: ratewarden's time per request over
#     the bare app's, allowed and denied, memory and Redis stores (Flask-Limiter as a reference).
#   - adapters_bench.py: FastAPI under uvicorn, Django and Flask under gunicorn: ratewarden's throughput over the
#     bare app's, over the floor's (the bare app sending the same fields; on Redis also one INCR a request) and over
#     slowapi's / django-ratelimit's / Flask-Limiter's, allowed and denied, memory and Redis.
# redis-server (started by tests/servers/launch.py) runs at a higher CPU priority (when allowed) to stand in for a
# Redis host of its own: on 2 shared cores its wake-up latency would otherwise measure the scheduler, for every
# limiter alike.
set -euo pipefail
cd "$(dirname "$0")/../.."

source bench/python/venv.sh

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "running (about 15 minutes)..." >&2
# One redis-server for the three (bench/servers.py: from tests/servers/launch.py, gone when they end, however).
python3 bench/servers.py --nice bash -c \
  'for b in calls http_bench adapters_bench; do "$0" -P "bench/python/$b.py" "$1" || exit; done' \
  "$venv/bin/python" {redis} >"$dir/results.jsonl"
"$venv/bin/python" -P bench/python/report.py <"$dir/results.jsonl"
