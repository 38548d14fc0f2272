#!/usr/bin/env bash
# The binary packages as a release builds them (scripts/build_packages.sh: the sdist, the manylinux wheel, the npm
# tarball with its prebuilt addon) and as a user installs them: each installed with no compiler, CMake or hiredis
# visible, then smoke-tested against real redis-server processes; the sdist without its build dependencies; the
# tarball's fallback build from source. Steps, checks and install times: tests/install/check_install.py.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
SECONDS=0
scripts/build_packages.sh build-install/dist
echo "packages built in ${SECONDS} s"
PATH="$PWD/build-python/tools/bin:$PATH" "${PYTHON:-python3}" tests/install/check_install.py build-install/dist
