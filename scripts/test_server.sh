#!/usr/bin/env bash
# ratewarden-server over the wire (tests/server/*.py): the Python package's venv (.venv, made by
# scripts/test_python.sh, which scripts/test.sh runs first; made here if missing) with grpcio and grpcio-tools (the
# stubs are generated from server/proto at test time) and Flask (a route sharing a limit with the server), the binary
# of the CMake build $RATEWARDEN_BUILD_DIR (default build-test; built here if missing), real redis-server processes
# from tests/servers/launch.py.
# Arguments go to pytest in place of tests/server:  scripts/test_server.sh tests/server/test_wire.py -k health
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
build=${RATEWARDEN_BUILD_DIR:-build-test}
if [ ! -x "$build/server/ratewarden-server" ]; then
  echo "== building ratewarden-server in $build =="
  cmake -S . -B "$build" -G Ninja -DRATEWARDEN_BUILD_SERVER=ON >/dev/null
  cmake --build "$build" --target ratewarden-server -j "$(nproc)"
fi
venv=.venv
echo "== server tests (venv $venv: ratewarden, pytest, flask, grpcio, grpcio-tools, pyyaml) =="
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q pytest "flask>=3,<4" grpcio grpcio-tools pyyaml
"$venv/bin/python" -P -c "import ratewarden" 2>/dev/null || "$venv/bin/python" -m pip install -q .
RATEWARDEN_SERVER="$PWD/$build/server/ratewarden-server" \
  "$venv/bin/python" -P -m pytest -q -p no:cacheprovider "${@:-tests/server}"
