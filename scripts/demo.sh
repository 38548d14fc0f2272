#!/usr/bin/env bash
# The demo: login protection on the embedded memory store (5 attempts per username per minute).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target login_demo >/dev/null
echo "== C++: 5 login attempts per username per minute (memory store) =="
build/examples/cpp/login_demo

# --- Python: the Flask login example (examples/python/login.py) -------------------------------------------------
# Installs the package into .venv the first time (pip install ., as a user would), then serves the example on a free
# loopback port and sends it 7 login attempts over HTTP.
echo
echo "== Python: the Flask login route over HTTP, 5 attempts per username per minute (memory store) =="
[ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
.venv/bin/python -c "import ratewarden.flask" 2>/dev/null || .venv/bin/python -m pip install -q flask .
.venv/bin/python -P examples/python/login.py --demo

# --- Node: the Express login example (examples/node/login.js) ----------------------------------------------------
# Installs the package the first time (npm ci builds the addon with the local Node headers), serves the example on a
# free loopback port, sends it 7 login attempts over HTTP and stops it by PID.
echo
echo "== Node: the Express login route over HTTP, 5 attempts per username per minute (memory store) =="
export npm_config_nodedir=/usr
[ -f build-node/Release/ratewarden.node ] && [ -d node_modules/express ] || \
  npm ci --foreground-scripts --no-progress >/dev/null 2>&1 || { echo "demo: npm ci failed; run scripts/test_node.sh" >&2; exit 1; }
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
PORT=$port HOST=127.0.0.1 RATEWARDEN_STORE=memory:// node examples/node/login.js >/dev/null &
server=$!
trap 'kill $server 2>/dev/null' EXIT
until node -e "require('net').connect($port,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))"; do
  sleep 0.1
done
node examples/node/burst.js "http://127.0.0.1:$port"
