"""One process of the pacing fleet (test_pacing_fleet.py), in Python:

    pacing_worker.py STORE_URL KEY POLICY BURST RECORDER_URL START_AT DURATION NAME THREADS TASKS

Warmed up first (the store connected, each caller's HTTP connection open: GET RECORDER_URL/warmup/...). From
START_AT (time.time()) to START_AT + DURATION, THREADS threads and TASKS asyncio tasks each loop: acquire a slot
of KEY (gcra POLICY with BURST) with a timeout that ends at the deadline, then GET RECORDER_URL/NAME/caller. A caller
stops at its first RateLimitTimeout (its next slot lies past the deadline). Prints one JSON line: calls made, and
the process' CPU time in seconds (all of it, and during the paced run only).
"""
from __future__ import annotations

import asyncio
import http.client
import json
import sys
import threading
import time
from urllib.parse import urlsplit

import ratewarden

url, key, policy, burst, recorder, start_at, duration, name, threads, tasks = sys.argv[1:11]
START, DEADLINE = float(start_at), float(start_at) + float(duration)
HOST, PORT = urlsplit(recorder).hostname, urlsplit(recorder).port
limiter = ratewarden.Limiter(policy, url, algorithm="gcra", burst=int(burst))
calls = [0]
count_lock = threading.Lock()


def made_a_call() -> None:
    with count_lock:
        calls[0] += 1


def thread_caller(i: int, connection: http.client.HTTPConnection) -> None:
    while True:
        try:
            limiter.acquire(key, timeout=max(0.0, DEADLINE - time.time()))
        except ratewarden.RateLimitTimeout:
            break
        connection.request("GET", f"/{name}/thread{i}")
        connection.getresponse().read()
        made_a_call()
    connection.close()


async def get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> None:
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
    headers = (await reader.readuntil(b"\r\n\r\n")).lower().split(b"\r\n")
    await reader.readexactly(next(int(h.split(b":")[1]) for h in headers if h.startswith(b"content-length:")))


async def task_caller(i: int, start: "asyncio.Event") -> None:
    reader, writer = await asyncio.open_connection(HOST, PORT)
    await get(reader, writer, f"/warmup/{name}/task{i}")
    await start.wait()
    while True:
        try:
            await limiter.aacquire(key, timeout=max(0.0, DEADLINE - time.time()))
        except ratewarden.RateLimitTimeout:
            break
        await get(reader, writer, f"/{name}/task{i}")
        made_a_call()
    writer.close()


async def all_tasks(threads_started: threading.Barrier) -> None:
    start = asyncio.Event()
    await limiter.apeek(key)  # this loop's asynchronous path, warmed up too
    callers = [asyncio.ensure_future(task_caller(i, start)) for i in range(int(tasks))]
    await asyncio.get_running_loop().run_in_executor(None, threads_started.wait)  # every thread warmed up
    start.set()
    await asyncio.gather(*callers)


def main() -> None:
    # Warmed up before the start: the store connected (a peek charges nothing), and every caller's HTTP connection
    # open and used once, so that the first paced calls do no more work than the others.
    limiter.peek(key)
    connections = [http.client.HTTPConnection(HOST, PORT, timeout=10) for _ in range(int(threads))]
    for i, connection in enumerate(connections):
        connection.request("GET", f"/warmup/{name}/thread{i}")
        connection.getresponse().read()
    warmed_up = threading.Barrier(2)
    loop_thread = threading.Thread(target=lambda: asyncio.run(all_tasks(warmed_up))) if int(tasks) else None
    if loop_thread:
        loop_thread.start()
    time.sleep(max(0.0, START - time.time()))
    cpu_start = time.process_time()
    late = time.time() - START
    workers = [threading.Thread(target=thread_caller, args=(i, c)) for i, c in enumerate(connections)]
    for worker in workers:
        worker.start()
    if loop_thread:
        warmed_up.wait()
        loop_thread.join()
    for worker in workers:
        worker.join()
    cpu_end = time.process_time()
    print(json.dumps({"name": name, "calls": calls[0], "cpu_s": cpu_end, "cpu_paced_s": cpu_end - cpu_start,
                      "late_s": late}))


main()
