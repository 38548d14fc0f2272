#!/usr/bin/env bash
# The Python package without PyPI (docs/python.md, the offline route): Debian's pybind11 and one CMake build that
# installs the package into a venv's site-packages. Needs `apt-get install pybind11-dev python3-dev python3-flask
# python3-pytest` and a venv made with `/usr/bin/python3 -m venv --system-site-packages .venv`. Not run by CI, which
# installs through pip (scripts/test_python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build-py -G Ninja -DRATEWARDEN_BUILD_PYTHON=ON -DRATEWARDEN_BUILD_TESTS=OFF \
  -DRATEWARDEN_BUILD_EXAMPLES=OFF -DRATEWARDEN_BUILD_CAPI=OFF -DPython_EXECUTABLE=.venv/bin/python
cmake --build build-py && cmake --install build-py --prefix "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"
