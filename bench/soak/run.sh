#!/usr/bin/env bash
# A soak that proves flat (issue 38): mixed work on memory://, redis://, redis+cluster:// and postgres:// from Python
# (sync, asyncio, and a process that forks), Node and C processes — hit, peek, reset, hit_many, reserve, async and
# sync — while each store is restarted every minute; every process's RSS, open descriptors and threads sampled every
# 10 s. After the first minute each stays within 5% of its first sample (threads: exactly). Prints the samples, a
# table per process and a verdict; exits 1 unless every process is flat (bench/soak/soak.py says how).
#
#   bench/soak/run.sh                  10 minutes (a sample every 10 s, warm-up and restart period 60 s)
#   bench/soak/run.sh --seconds 60     the short form CI runs (a sample every 5 s, warm-up and restart period 20 s)
#
# What it runs on: $RATEWARDEN_VENV, a venv with ratewarden installed (else build-python/soak-venv, created here and
# given ratewarden built from this tree whenever the tree's core/ or python/ changed since); $RATEWARDEN_BUILD, a
# CMake build of this tree with the C ABI (else build-soak, Release, configured and built here); the Node addon of
# this tree (bench/node/setup.sh builds it, unless $RATEWARDEN_NODE_BUILT is set: scripts/test_polyglot.sh has built
# it). Servers start through tests/servers/launch.py; nothing outlives the run, however it ends. RW_SOAK_PAUSE_MS
# (default 5) is each worker's pause between rounds.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ -n "${RATEWARDEN_VENV:-}" ]; then
  venv=$RATEWARDEN_VENV
else
  scripts/setup.sh
  venv=build-python/soak-venv
  [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
  stamp=$(git rev-parse HEAD:core HEAD:python HEAD:CMakeLists.txt HEAD:pyproject.toml | tr '\n' ' ')
  if [ "$(cat "$venv/.ratewarden-tree" 2>/dev/null)" != "$stamp" ]; then
    echo "run.sh: building ratewarden from this tree into $venv (a few minutes)" >&2
    "$venv/bin/python" -m pip install -q --force-reinstall --no-deps .
    echo "$stamp" >"$venv/.ratewarden-tree"
  fi
fi
"$venv/bin/python" -c "import ratewarden" || { echo "run.sh: ratewarden is not installed in $venv" >&2; exit 1; }

build=${RATEWARDEN_BUILD:-build-soak}
if [ -z "${RATEWARDEN_BUILD:-}" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRATEWARDEN_WERROR=ON -DRATEWARDEN_BUILD_TESTS=OFF \
    -DRATEWARDEN_BUILD_EXAMPLES=OFF -DRATEWARDEN_BUILD_CAPI=ON >/dev/null
fi
cmake --build "$build" --target ratewarden -j 2 >/dev/null
lib=$(dirname "$(find "$build" -name 'libratewarden.so' | head -1)")
# The C worker is built the way a C user builds against the library: cc, the header, -lratewarden.
cc -std=c11 -O2 -Wall -Wextra -Werror -pthread -Icapi/include bench/soak/worker.c -o "$build/soak_worker" \
  -L"$lib" -lratewarden -Wl,-rpath,"$(cd "$lib" && pwd)"

[ -n "${RATEWARDEN_NODE_BUILT:-}" ] || source bench/node/setup.sh

exec "$venv/bin/python" bench/soak/soak.py --python "$venv/bin/python" --c-worker "$build/soak_worker" "$@"
