#!/usr/bin/env bash
# The Python benchmark, one command: ratewarden against limits and Flask-Limiter (current releases from PyPI,
# installed into a benchmark-only venv), in one run, printing one table with the ratios of that run.
#   - calls.py: hit()/allow() on the memory store over 10k keys; hit() on Redis with 1 and 8 threads.
#   - http_bench.py: Flask under gunicorn (sync and gthread workers) and wrk: ratewarden's time per request over
#     the bare app's, allowed and denied, memory and Redis stores (Flask-Limiter as a reference).
#   - adapters_bench.py: FastAPI under uvicorn, Django and Flask under gunicorn: ratewarden's throughput over the
#     bare app's, over the floor's (the bare app sending the same fields; on Redis also one INCR a request) and over
#     slowapi's / django-ratelimit's / Flask-Limiter's, allowed and denied, memory and Redis.
# redis-server runs at a higher CPU priority (when allowed) to stand in for a Redis host of its own: on 2 shared
# cores its wake-up latency would otherwise measure the scheduler, for every limiter alike.
set -euo pipefail
cd "$(dirname "$0")/../.."

source bench/python/venv.sh

dir=$(mktemp -d)
port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
nice -n -10 true 2>/dev/null && prio=(nice -n -10) || prio=()
"${prio[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
  --pidfile "$dir/redis.pid" --dir "$dir" >/dev/null
trap 'kill "$(cat "$dir/redis.pid")" 2>/dev/null; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done

url="redis://127.0.0.1:$port"
echo "running (about 15 minutes)..." >&2
{
  "$venv/bin/python" -P bench/python/calls.py "$url"
  "$venv/bin/python" -P bench/python/http_bench.py "$url"
  "$venv/bin/python" -P bench/python/adapters_bench.py "$url"
} | tee "$dir/results.jsonl" >/dev/null
"$venv/bin/python" -P bench/python/report.py <"$dir/results.jsonl"
