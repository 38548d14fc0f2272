"""gunicorn's configuration for metrics_flask_app.py: each worker, once forked, serves its own figures on a port of
its own among RW_METRICS_PORT, RW_METRICS_PORT + 1, ... (as many as workers): docs/python.md, "Metrics and events"."""

import os


def post_fork(server, worker):
    import ratewarden.prometheus

    first = int(os.environ["RW_METRICS_PORT"])
    port = ratewarden.prometheus.start_worker_server(range(first, first + server.cfg.workers), addr="127.0.0.1")
    server.log.info("worker %s serves its figures on port %s", worker.pid, port)
