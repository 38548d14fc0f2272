#!/usr/bin/env bash
# The demo: login protection on the embedded memory store (5 attempts per username per minute).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target login_demo >/dev/null
echo "== C++: 5 login attempts per username per minute (memory store) =="
build/examples/cpp/login_demo
