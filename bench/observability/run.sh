#!/usr/bin/env bash
# The chart of docs/observability.md ("A store outage, as the figures show it"), from a real run (issue 36): a Flask
# login route limited to 5/second per username on Redis, failing closed, under gunicorn with 2 workers that each
# serve their ratewarden figures on a port of their own; 3 users and an attacker (100 requests a second) for 40 s;
# redis-server SIGKILLed at 15 s and started again on the same port at 25 s; both workers' /metrics scraped every
# 0.5 s. Writes docs/img/redis-outage.csv (the scrapes), .json (the run and its totals), .png (the chart), and the
# chart's caption in docs/observability.md, computed from the CSV and JSON. About a minute once the venv is built.
#
#   bench/observability/run.sh [outage.py options]     (outage.py --help; --out elsewhere leaves docs/ alone)
#   bench/observability/run.sh --chart-only            redraws the chart and caption from the committed CSV and JSON
#
# The Python environment: $RATEWARDEN_VENV if set (used as it is: ratewarden must be installed in it; what else the
# run needs is added), else build-python/observability-venv, created here, with ratewarden built from this tree
# (a few minutes) whenever the tree's committed core/ or python/ changed since it was built there.
set -euo pipefail
cd "$(dirname "$0")/../.."

needs=(flask gunicorn prometheus-client matplotlib)
if [ -n "${RATEWARDEN_VENV:-}" ]; then
  venv=$RATEWARDEN_VENV
  "$venv/bin/python" -c "import ratewarden" ||
    { echo "run.sh: ratewarden is not installed in $venv" >&2; exit 1; }
  "$venv/bin/python" -c "import flask, gunicorn, prometheus_client, matplotlib" 2>/dev/null ||
    "$venv/bin/python" -m pip install -q "${needs[@]}"
else
  scripts/setup.sh  # redis-server and the build's system packages
  venv=build-python/observability-venv
  [ -x "$venv/bin/python" ] || { echo "run.sh: creating $venv" >&2; "${PYTHON:-python3}" -m venv "$venv"; }
  "$venv/bin/python" -c "import flask, gunicorn, prometheus_client, matplotlib" 2>/dev/null ||
    "$venv/bin/python" -m pip install -q "${needs[@]}"
  stamp=$(git rev-parse HEAD:core HEAD:python HEAD:CMakeLists.txt HEAD:pyproject.toml | tr '\n' ' ')
  if [ "$(cat "$venv/.ratewarden-tree" 2>/dev/null)" != "$stamp" ]; then
    echo "run.sh: building ratewarden from this tree into $venv (a few minutes)" >&2
    "$venv/bin/python" -m pip install -q --force-reinstall --no-deps .
    echo "$stamp" >"$venv/.ratewarden-tree"
  fi
  if ! git diff --quiet HEAD -- core python CMakeLists.txt pyproject.toml; then
    echo "run.sh: note: uncommitted changes in core/ or python/ are not in $venv (delete it to rebuild)" >&2
  fi
fi

if [ "${1:-}" = "--chart-only" ]; then
  exec "$venv/bin/python" bench/observability/chart.py docs/img/redis-outage --doc docs/observability.md
fi
command -v redis-server >/dev/null || { echo "run.sh: redis-server is needed (scripts/setup.sh)" >&2; exit 1; }
echo "run.sh: about 45 s of load; redis-server and gunicorn go when it ends, however it ends" >&2
exec "$venv/bin/python" bench/observability/outage.py "$@"
