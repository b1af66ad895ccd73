"""CNF Table 4: a key-value server over TCP, regions against pickling.

    python benchmarks/kv_server.py [--seconds 3] [--clients 3]

An asyncio server on 127.0.0.1 holds a database of 100, 1,000 or 10,000
values, each a pointtree of depth 10 (1,024 (x, y) float leaves). A `get`
answers with the value:
- bale: the database holds one region per key; the server writes the
  region's bytes unchanged (the region's header frames the reply); the
  client receives it with bale.recv (verified, as data from a socket).
- pickle: the database holds Python objects; the server pickles the value on
  each request (protocol 5) and sends it length-prefixed; the client
  unpickles it.
Client processes send requests for random keys for --seconds; the table
gives requests per second summed over clients. Writes benchmarks/REPORT.md
(section "Key-value server").
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import pickle
import random
import socket
import struct
import sys
import time

import bale
import common

DEPTH = 10


def pointtree(depth: int, seed: int):
    level: list = [(float(i + seed), float(-i)) for i in range(1 << depth)]
    for _ in range(depth):
        level = [(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def serve(mode: str, keys: int, ready) -> None:
    db = {f"key{i}".encode(): pointtree(DEPTH, i) for i in range(keys)}
    if mode == "bale":
        db = {k: bale.compact(v) for k, v in db.items()}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (n,) = struct.unpack("<I", await reader.readexactly(4))
                value = db[await reader.readexactly(n)]
                if mode == "bale":
                    writer.write(memoryview(value))  # the stored bytes, as they are
                else:
                    payload = pickle.dumps(value, protocol=5)
                    writer.write(struct.pack("<Q", len(payload)))
                    writer.write(payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        ready.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def client(mode: str, port: int, keys: int, seconds: float, seed: int, out) -> None:
    rng = random.Random(seed)
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    done = 0
    deadline = time.perf_counter() + seconds
    with sock:
        while time.perf_counter() < deadline:
            key = f"key{rng.randrange(keys)}".encode()
            sock.sendall(struct.pack("<I", len(key)) + key)
            if mode == "bale":
                value = bale.recv(sock).root
            else:
                (n,) = struct.unpack("<Q", common.recv_exact(sock, 8))
                value = pickle.loads(common.recv_exact(sock, n))
            assert len(value) == 2
            done += 1
    out.put(done)


def measure(mode: str, keys: int, clients: int, seconds: float) -> float:
    ctx = multiprocessing.get_context("spawn")
    ready, out = ctx.Queue(), ctx.Queue()
    server = ctx.Process(target=serve, args=(mode, keys, ready), daemon=True)
    server.start()
    try:
        port = ready.get(timeout=600)
        procs = [ctx.Process(target=client, args=(mode, port, keys, seconds, c, out)) for c in range(clients)]
        for p in procs:
            p.start()
        total = sum(out.get(timeout=seconds + 120) for _ in procs)
        for p in procs:
            p.join(timeout=60)
        return total / seconds
    finally:
        server.terminate()
        server.join(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args()
    rows = []
    for keys in args.sizes:
        rps = {mode: measure(mode, keys, args.clients, args.seconds) for mode in ("bale", "pickle")}
        rows.append((f"{keys:,}", f"{rps['bale']:,.0f}", f"{rps['pickle']:,.0f}", f"{rps['bale'] / rps['pickle']:.2f}x"))
        print("  ".join(f"{c:>12s}" for c in rows[-1]), flush=True)
    if not args.no_report:
        common.write_section("Key-value server (CNF Table 4)", [
            f"`python benchmarks/kv_server.py --seconds {args.seconds:g} --clients {args.clients}`: asyncio server on "
            "127.0.0.1, values are depth-10 pointtrees (1,024 float-pair leaves); bale sends the stored region "
            "unchanged and clients `bale.recv` it (verified); pickle pickles on each request and clients unpickle. "
            "Requests per second over all clients.",
            "",
            *common.table(["keys", "bale req/s", "pickle req/s", "bale / pickle"], ["r", "r", "r", "r"], rows),
        ])


if __name__ == "__main__":
    sys.exit(main())
