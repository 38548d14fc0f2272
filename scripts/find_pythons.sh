#!/usr/bin/env bash
# The CPython interpreters that scripts/build_packages.sh builds and tests wheels for: one path a line, oldest first.
#   RATEWARDEN_PYTHONS="3.9 3.13" (or paths, e.g. "/usr/bin/python3.11 3.12")   these
#   unset                                                                       every supported version below
#   find_pythons.sh --ends: the oldest and the newest supported version only (what CI tests)
# A version is found through pyenv (its newest installed release of that version) when pyenv is there, else as
# python3.X on PATH. A missing one fails, saying how to get it: a release builds every wheel or none.
set -euo pipefail
supported="3.9 3.10 3.11 3.12 3.13"  # keep equal to pyproject.toml's classifiers and docs/python.md's table

find_one() {
  local want=$1 found=""
  if [[ $want == */* ]]; then
    found=$want
  elif command -v pyenv >/dev/null && latest=$(pyenv latest "$want" 2>/dev/null); then
    found=$(pyenv prefix "$latest")/bin/python3
  elif command -v "python$want" >/dev/null; then
    found=$(command -v "python$want")
  fi
  # A pyenv shim answers for versions it has not got: ask the interpreter itself.
  if [ -z "$found" ] || ! "$found" -c 'import sys, sysconfig, venv, ensurepip
sys.exit(sysconfig.get_config_var("Py_GIL_DISABLED") == 1)' 2>/dev/null; then
    echo "find_pythons: no usable CPython $want (with venv and ensurepip, not free-threaded). Get it with" \
      "pyenv (pyenv install $want), or your distribution's python$want with its venv and dev packages" \
      "(Ubuntu: the deadsnakes PPA), or name its path in RATEWARDEN_PYTHONS" >&2
    return 1
  fi
  echo "$found"
}

wanted=${RATEWARDEN_PYTHONS:-$supported}
[ "${1:-}" = --ends ] && wanted="${supported%% *} ${supported##* }"
for want in $wanted; do
  find_one "$want"
done
