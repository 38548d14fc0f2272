#!/usr/bin/env bash
# The Node benchmark, one command: ratewarden against rate-limiter-flexible, express-rate-limit (+ rate-limit-redis)
# and redis-benchmark, all in one run on this machine, printed as one table of ratios. Starts its own redis-server
# on a free loopback port and stops it by PID. BENCH_ONLY=memory,redis,express,adapters picks sections.
set -euo pipefail
cd "$(dirname "$0")/../.."

source bench/node/setup.sh
[ -d bench/node/express/node_modules/express4 ] || npm ci --prefix bench/node/express --no-progress >/dev/null
[ -d bench/node/frameworks/node_modules/fastify ] || npm ci --prefix bench/node/frameworks --no-progress >/dev/null

free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
dir=$(mktemp -d)
port=$(free_port)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile "$dir/redis.pid" \
  --dir "$dir" >/dev/null
trap 'kill "$(cat "$dir/redis.pid")" 2>/dev/null; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done

node bench/node/run.js "$port"
