"""A TCP proxy that holds every chunk from the client for DELAY seconds before passing it on: it makes each store
call slow without making Redis itself slow, so a test can see calls overlap. Run: delay_proxy.py LISTEN_PORT
TARGET_PORT DELAY; prints "ready" once listening."""

import asyncio
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    try:
        while data := await reader.read(65536):
            await asyncio.sleep(delay)
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


async def main(listen: int, target: int, delay: float) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(pipe(client_r, server_w, delay), pipe(server_r, client_w, 0), return_exceptions=True)

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])))
