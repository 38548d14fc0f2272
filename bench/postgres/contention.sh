#!/usr/bin/env bash
# One hot key on the PostgreSQL store under contention (bench/postgres/contention.py says what is measured): builds
# the C ABI (Release) in build-bench/, then runs contention.py with the arguments given, e.g.
#   bench/postgres/contention.sh --hog 6 --rounds 5 --timeouts 250ms,1s,10s
# (--hog needs stress-ng: apt-get install stress-ng). It starts and removes its own PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/setup.sh
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DRATEWARDEN_BUILD_BENCH=ON >/dev/null
cmake --build build-bench --target ratewarden >/dev/null
exec python3 bench/postgres/contention.py build-bench/capi/libratewarden.so "$@"
