#!/usr/bin/env bash
# The Node benchmark, one command: ratewarden against rate-limiter-flexible, express-rate-limit (+ rate-limit-redis)
# and redis-benchmark, all in one run on this machine, printed as one table of ratios. run.js starts its own
# redis-server (tests/servers/launch.py). BENCH_ONLY=memory,redis,express,adapters picks sections.
set -euo pipefail
cd "$(dirname "$0")/../.."

source bench/node/setup.sh
[ -d bench/node/express/node_modules/express4 ] || npm ci --prefix bench/node/express --no-progress >/dev/null
[ -d bench/node/frameworks/node_modules/fastify ] || npm ci --prefix bench/node/frameworks --no-progress >/dev/null

node bench/node/run.js
