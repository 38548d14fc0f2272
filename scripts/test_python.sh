#!/usr/bin/env bash
# The Python package as a user gets it: `pip wheel .` (build isolation: scikit-build-core and pybind11 from PyPI),
# the wheel installed into a fresh venv, then pytest (and gunicorn, for the prefork test) against the installed package and real
# redis-server processes — with the current Flask 3.x (and FastAPI, Starlette, Django, uvicorn for the other HTTP
# adapters: tests/python/test_adapters.py), prometheus_client (ratewarden.prometheus: tests/python/test_metrics.py) and
# the OpenTelemetry API, SDK and exporter to Prometheus (ratewarden.opentelemetry: tests/python/test_otel.py), and
# again in a second venv with Flask 2.2 (the Flask tests only). The whole suite runs in one more worker process than
# there are cores (pytest-xdist): its tests mostly wait for servers and HTTP round trips.
# Arguments go to pytest in place of tests/python, in the first venv only (one process):
#   scripts/test_python.sh tests/python/test_flask.py -k refusal
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
python=${PYTHON:-python3}

tests=("${@:-tests/python}")
wheels=build-python/wheels
run_suite() {  # venv directory, pytest options, then the requirements
  local venv=$1 pytest_options=$2
  shift 2
  echo "== Python tests ($*) =="
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q pytest pytest-xdist gunicorn "$@"
  if [ ! -d "$wheels" ]; then  # built once, for both venvs
    echo "== building the wheel (pip wheel .) =="
    "$venv/bin/python" -m pip wheel -q --no-deps -w "$wheels" .
  fi
  "$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheels"/ratewarden-*.whl
  # -P: the source tree must not shadow the installed package (a test checks it).
  # shellcheck disable=SC2086  # the options are words
  "$venv/bin/python" -P -m pytest -q -p no:cacheprovider $pytest_options "${tests[@]}"
}

# Every worker must collect the same tests: one random fuzz seed for the run (RATEWARDEN_FUZZ_SEED replays one).
export RATEWARDEN_FUZZ_SEED=${RATEWARDEN_FUZZ_SEED:-$(python3 -c 'import random; print(random.randrange(3, 2**32))')}
workers=$([ $# -eq 0 ] && echo "-n $(($(nproc) + 1))" || echo "")
rm -rf "$wheels"
run_suite .venv "$workers" "flask>=3,<4" "fastapi>=0.100" "uvicorn>=0.20" "django>=4.2,<6" python-multipart \
  "prometheus-client>=0.16" "opentelemetry-api>=1.12" "opentelemetry-sdk>=1.12" opentelemetry-exporter-prometheus
[ $# -eq 0 ] || exit 0  # a chosen test: the first venv's run is the one asked for
# The Flask tests only: the rest does not depend on Flask's version, and ran above.
tests=(tests/python/test_flask.py tests/python/test_http_vectors.py
  tests/python/test_metrics.py::test_flask_limiters_are_named_by_route_and_rates)
run_suite build-python/venv-flask2.2 "" "flask==2.2.5" "werkzeug==2.2.3" "prometheus-client>=0.16"
