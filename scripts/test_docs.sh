#!/usr/bin/env bash
# Every fenced code block of README.md and docs/*.md: run (Python, Node, C, C++, shell; against a real redis-server)
# or marked `<lang> fragment <path>` / `text` (tests/docs/test_snippets.py says the rules), and the README's Python and
# Node programs sharing one limit. Runs after scripts/test.sh's earlier steps, whose products it uses: the .venv with
# ratewarden and Flask (test_python.sh), the Node addon (test_node.sh) and the CMake build $RATEWARDEN_BUILD_DIR
# (default build-test), which it installs into a temporary prefix for the C and C++ blocks.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || { echo "test_docs: no .venv: run scripts/test_python.sh first" >&2; exit 1; }
[ -f build-node/Release/ratewarden.node ] || { echo "test_docs: no Node addon: run scripts/test_node.sh first" >&2; exit 1; }
export RATEWARDEN_BUILD_DIR=${RATEWARDEN_BUILD_DIR:-$PWD/build-test}
.venv/bin/python -P -m pytest -q -p no:cacheprovider -rA tests/docs
