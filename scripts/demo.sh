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
