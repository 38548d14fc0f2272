#!/usr/bin/env bash
# The Python package as a user gets it: `pip install .` into a fresh venv (build isolation: scikit-build-core and
# pybind11 from PyPI), then pytest (and gunicorn, for the prefork test) against the installed package and real
# redis-server processes — with the current Flask 3.x (and FastAPI, Starlette, Django, uvicorn for the other HTTP
# adapters: tests/python/test_adapters.py) and prometheus_client (ratewarden.prometheus: tests/python/test_metrics.py),
# and again in a second venv with Flask 2.2 (the Flask tests only).
# Arguments go to pytest in place of tests/python, in the first venv only:
#   scripts/test_python.sh tests/python/test_flask.py -k refusal
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
python=${PYTHON:-python3}

tests=("${@:-tests/python}")
run_suite() {  # venv directory, pytest options, then the requirements
  local venv=$1 pytest_options=$2
  shift 2
  echo "== Python tests ($*) =="
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q pytest gunicorn "$@"
  "$venv/bin/python" -m pip install -q --force-reinstall .
  # -P: the source tree must not shadow the installed package (a test checks it).
  # shellcheck disable=SC2086  # the options are words
  "$venv/bin/python" -P -m pytest -q -p no:cacheprovider $pytest_options "${tests[@]}"
}

run_suite .venv "" "flask>=3,<4" "fastapi>=0.100" "uvicorn>=0.20" "django>=4.2,<6" python-multipart \
  "prometheus-client>=0.16"
[ $# -eq 0 ] || exit 0  # a chosen test: the first venv's run is the one asked for
run_suite build-python/venv-flask2.2 "--ignore=tests/python/test_adapters.py --ignore=tests/python/test_http_fast_paths.py --ignore=tests/python/test_metrics_http.py" \
  "flask==2.2.5" "werkzeug==2.2.3" "prometheus-client>=0.16"
