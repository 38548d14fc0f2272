#!/usr/bin/env bash
# The demo: login protection, 5 attempts per username per minute — from C++, then the Flask and the Express
# examples over HTTP on loopback, each on its embedded memory store.
#   scripts/demo.sh            no Redis needed
#   scripts/demo.sh --redis    also runs both apps on one throwaway redis-server: one limit for both
#   REDIS_URL=redis://host:port scripts/demo.sh    the same on that Redis
# Installs and builds what it needs the first time, saying which step it is on and showing the builds' [n/N] lines.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo "-- demo [$1/4] $2"; }
progress() { grep --line-buffered -E '^ *\[[0-9]+/[0-9]+\]|^ratewarden: ' || true; }  # build steps only

step 1 "system packages (scripts/setup.sh)"
scripts/setup.sh
step 2 "the C++ demo (CMake; the first build compiles the core: about a minute)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target login_demo | progress
echo "== C++: 5 login attempts per username per minute (memory store) =="
build/examples/cpp/login_demo

# The Python package, installed into .venv the first time (pip install ., as a user would).
step 3 "the Python package in .venv (pip install .: builds the extension the first time, about a minute)"
[ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
if ! .venv/bin/python -c "import ratewarden.flask" 2>/dev/null; then
  .venv/bin/python -m pip install -v flask . 2>&1 | progress
  .venv/bin/python -c "import ratewarden.flask" || { echo "demo: pip install . failed; run scripts/test_python.sh" >&2; exit 1; }
fi
# The Node package: npm ci builds the addon with the local Node headers.
step 4 "the Node package (npm ci: builds the addon the first time, about a minute)"
export npm_config_nodedir=/usr
if [ ! -f build-node/Release/ratewarden.node ] || [ ! -d node_modules/express ]; then
  npm ci --foreground-scripts --no-progress 2>&1 | progress
  [ -f build-node/Release/ratewarden.node ] || { echo "demo: npm ci failed; run scripts/test_node.sh" >&2; exit 1; }
fi

echo
echo "== Flask and Express over HTTP (examples/python/login.py, examples/node/login.js) =="
.venv/bin/python examples/demo.py

redis_url=${REDIS_URL:-}
if [ -z "$redis_url" ] && [ "${1:-}" = "--redis" ]; then
  dir=$(mktemp -d)
  port=$(.venv/bin/python -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" >/dev/null &
  redis=$!
  trap 'kill $redis 2>/dev/null; rm -rf "$dir"' EXIT
  until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
  redis_url="redis://127.0.0.1:$port"
fi
if [ -n "$redis_url" ]; then
  echo
  echo "== The same apps on one Redis: attempts alternate between Flask and Express =="
  .venv/bin/python examples/demo.py --redis "$redis_url"
fi
