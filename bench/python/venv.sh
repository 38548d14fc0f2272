# Sourced (from the repository root) by the Python benchmarks: sets $venv to the benchmark-only venv, with the
# current releases of the peers from PyPI and ratewarden built from this tree.
scripts/setup.sh
venv=build-python/bench-venv
[ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q "limits[redis]" Flask-Limiter gunicorn flask fastapi "uvicorn[standard]" slowapi \
  django django-ratelimit redis
"$venv/bin/python" -m pip install -q --force-reinstall .
"$venv/bin/python" -m pip list 2>/dev/null | grep -iE "^(ratewarden|limits|flask|flask-limiter|gunicorn|redis|fastapi|starlette|uvicorn|slowapi|django|django-ratelimit) "
