#!/usr/bin/env bash
# The binary packages as a release builds them and as a user installs them (scripts/build_packages.sh, which runs
# tests/install/check_install.py): the sdist, wheels for the oldest and the newest supported CPython (a release
# builds them all), the npm tarball with its prebuilt addon; each installed with no compiler, CMake or hiredis
# visible, pip choosing the wheel, then smoke-tested against real redis-server and PostgreSQL processes; the sdist
# without its build dependencies; the tarball on each supported Node major and built from source.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
SECONDS=0
ends=$(scripts/find_pythons.sh --ends)
RATEWARDEN_PYTHONS=${RATEWARDEN_PYTHONS:-$ends} scripts/build_packages.sh build-install/dist
echo "packages built and checked in ${SECONDS} s"
