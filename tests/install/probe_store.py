"""Run by check_install.py with a venv's interpreter, under a layout of tests/install/layouts.py: one decision on
the store at URL, then one line: `ok`, or `error: ` with the error's message. It exits 0 either way: the caller
knows what the layout should give.

    python probe_store.py URL
"""
import os
import sys

import ratewarden

try:
    decision = ratewarden.Limiter("5/minute", sys.argv[1], prefix=f"probe-{os.getpid()}").hit("probe")
    print("ok" if decision.allowed else "denied")
except ratewarden.Error as error:
    print(f"error: {type(error).__name__}: {error}")
