"""CNF Table 4: a key-value server over TCP, regions against pickling.

    python benchmarks/kv_server.py [--quick | --smoke] [--seconds S] [--clients N] [--sizes N ...] [--no-report]

An asyncio server on 127.0.0.1 holds a database of 100, 1,000 or 10,000
values, each a pointtree of depth 10 (1,024 (x, y) float leaves). A `get`
answers with the value:
- bale: the database holds one region per key; the server writes the
  region's bytes unchanged (the region's header frames the reply); the
  client receives it with bale.recv (verified, as data from a socket).
- pickle: the database holds Python objects; the server pickles the value on
  each request (protocol 5) and sends it length-prefixed; the client
  unpickles it.
Client processes send requests for random keys for --seconds (3 s, 3
clients, every size in full mode; 1 s and 100 and 1,000 keys with
``--quick``; 0.3 s, one client, 100 keys with ``--smoke``) and check that
each reply is the tree stored under its key; the table gives requests per
second summed over clients. Writes the section "Key-value server (CNF
Table 4)".
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
            i = rng.randrange(keys)
            key = f"key{i}".encode()
            sock.sendall(struct.pack("<I", len(key)) + key)
            if mode == "bale":
                value = bale.recv(sock).root
            else:
                (n,) = struct.unpack("<Q", common.recv_exact(sock, 8))
                value = pickle.loads(common.recv_exact(sock, n))
            leaf = value
            for _ in range(DEPTH):
                leaf = leaf[0]
            if leaf[0] != float(i):  # the left-most leaf of key i's tree is (i, -0.0)
                out.put(-1)
                return
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
        counts = [out.get(timeout=seconds + 120) for _ in procs]
        if -1 in counts:
            raise SystemExit(f"{mode}, {keys} keys: a client received a value that is not its key's")
        total = sum(counts)
        for p in procs:
            p.join(timeout=60)
        return total / seconds
    finally:
        server.terminate()
        server.join(timeout=30)


# (seconds, clients, sizes) per mode; --seconds, --clients and --sizes override them
SIZES = {"smoke": (0.3, 1, [100]), "quick": (1.0, 3, [100, 1000]), "full": (3.0, 3, [100, 1000, 10000])}


def options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--seconds", type=float, help="seconds of requests per measurement (default by mode)")
    ap.add_argument("--clients", type=int, help="client processes (default by mode)")
    ap.add_argument("--sizes", type=int, nargs="+", help="database sizes, in keys (default by mode)")


def run(mode: str, plots_dir: str, args: argparse.Namespace | None = None) -> common.Section:
    seconds, clients, sizes = SIZES[mode]
    if args is not None:
        seconds = args.seconds if args.seconds is not None else seconds
        clients = args.clients if args.clients is not None else clients
        sizes = args.sizes or sizes
    rows = []
    for keys in sizes:
        rps = {mode: measure(mode, keys, clients, seconds) for mode in ("bale", "pickle")}
        rows.append((f"{keys:,}", f"{rps['bale']:,.0f}", f"{rps['pickle']:,.0f}", f"{rps['bale'] / rps['pickle']:.2f}x"))
        print("  ".join(f"{c:>12s}" for c in rows[-1]), flush=True)
    lines = [
        f"`python benchmarks/kv_server.py{'' if mode == 'full' else ' --' + mode}` ({seconds:g} s, {clients} "
        f"client{'s' if clients > 1 else ''}): asyncio server on "
        "127.0.0.1, values are depth-10 pointtrees (1,024 float-pair leaves); bale sends the stored region "
        "unchanged and clients `bale.recv` it (verified); pickle pickles on each request and clients unpickle. "
        "Every reply is checked to be its key's tree. Requests per second over all clients.",
        "",
        *common.table(["keys", "bale req/s", "pickle req/s", "bale / pickle"], ["r", "r", "r", "r"], rows),
    ]
    return common.Section("Key-value server (CNF Table 4)", lines, [], [])


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run, options)


if __name__ == "__main__":
    sys.exit(main())
