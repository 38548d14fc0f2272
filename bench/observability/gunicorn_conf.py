"""gunicorn's configuration for login_app.py: each worker, once forked, serves its own ratewarden figures on a port
of its own among OBS_METRICS_PORT, OBS_METRICS_PORT + 1, ... (as many as workers), as docs/observability.md tells
users to ("Several worker processes"); the driver scrapes every port and adds them up, as Prometheus'
`sum without (instance)` would."""

import os


def post_fork(server, worker):
    import ratewarden.prometheus

    first = int(os.environ["OBS_METRICS_PORT"])
    port = ratewarden.prometheus.start_worker_server(range(first, first + server.cfg.workers), addr="127.0.0.1")
    server.log.info("worker %s serves its figures on port %s", worker.pid, port)
