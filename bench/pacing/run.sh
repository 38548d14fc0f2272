#!/usr/bin/env bash
# The pacing benchmark, one command: ratewarden's acquire (Python and Node) against pyrate-limiter's blocking
# acquire on a Redis bucket and rate-limiter-flexible's RateLimiterQueue over RateLimiterRedis, all driving one
# recording HTTP server on 127.0.0.1 (bench/pacing/pacing.py says what is measured). Peers: the current releases,
# pyrate-limiter from PyPI into the benchmark venv, rate-limiter-flexible and ioredis from npm (devDependencies).
# About 3 minutes. PACING_ROUNDS=N chooses the rounds (default 3).
set -euo pipefail
cd "$(dirname "$0")/../.."

source bench/python/venv.sh   # $venv: the benchmark venv, with ratewarden built from this tree
"$venv/bin/python" -m pip install -q pyrate-limiter redis
"$venv/bin/python" -m pip list 2>/dev/null | grep -iE "^(pyrate-limiter|redis) "
source bench/node/setup.sh    # node_modules and the addon built from this tree
node -e "for (const p of ['rate-limiter-flexible', 'ioredis']) console.log(p, require(p + '/package.json').version)"

"$venv/bin/python" -P bench/pacing/pacing.py
