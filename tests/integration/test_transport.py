"""Regions over real sockets, asyncio streams and shared memory."""

import asyncio
import multiprocessing
import os
import socket
import struct
import subprocess
import sys
import threading

import pytest

import bale

RECORDS = [{"id": i, "name": f"n{i}", "vals": [i, i * 0.5, str(i)]} for i in range(20_000)]


def _tcp_pair():
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    conn, _ = server.accept()
    server.close()
    for s in (client, conn):
        s.settimeout(30)
    return client, conn


def test_send_recv_over_tcp_loopback():
    region = bale.compact(RECORDS)
    assert region.nbytes > 1 << 20  # many partial reads
    a, b = _tcp_pair()
    with a, b:
        sender = threading.Thread(target=bale.send, args=(a, region))
        sender.start()
        got = bale.recv(b)
        sender.join()
    assert bytes(got) == bytes(region)
    assert got.root == RECORDS


def test_several_regions_back_to_back_on_one_stream():
    a, b = socket.socketpair()
    with a, b:
        regions = [bale.compact(v) for v in ([1, 2], {"k": "v"}, "scalar root", list(range(1000)))]
        t = threading.Thread(target=lambda: [bale.send(a, r) for r in regions])
        t.start()
        received = [bale.recv(b) for _ in regions]
        t.join()
    assert [bale.thaw(r.root) for r in received] == [[1, 2], {"k": "v"}, "scalar root", list(range(1000))]


def test_peer_closing_early_is_a_connection_error():
    data = bytes(bale.compact(RECORDS[:100]))
    for cut in (0, 10, 64, len(data) // 2, len(data) - 1):
        a, b = socket.socketpair()
        with b:
            with a:
                a.sendall(data[:cut])
            with pytest.raises(ConnectionError):
                bale.recv(b)


def test_garbage_from_a_peer_is_a_format_error():
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"GET / HTTP/1.1\r\nHost: example\r\n\r\n" + bytes(64))
        with pytest.raises(bale.FormatError):
            bale.recv(b)


def test_forged_length_above_max_size_is_refused_before_allocating():
    head = bytearray(bytes(bale.compact([1]))[:64])
    struct.pack_into("<Q", head, 16, 1 << 60)
    a, b = socket.socketpair()
    with a, b:
        a.sendall(head)
        with pytest.raises(bale.FormatError, match="max_size"):
            bale.recv(b)
    small = bale.compact(list(range(1000)))
    a, b = socket.socketpair()
    with a, b:
        a.sendall(bytes(small))
        with pytest.raises(bale.FormatError, match="max_size"):
            bale.recv(b, max_size=1000)


def test_tampered_payload_is_caught_by_default_verification():
    data = bytearray(bytes(bale.compact(RECORDS[:100])))
    data[200] ^= 0x40
    a, b = socket.socketpair()
    with a, b:
        a.sendall(data)
        with pytest.raises(bale.FormatError, match="checksum"):
            bale.recv(b)


def test_timeout_bounds_the_wait_for_a_silent_peer():
    a, b = socket.socketpair()
    with a, b:
        b.settimeout(0.2)
        a.sendall(bytes(bale.compact([1, 2, 3]))[:40])
        with pytest.raises(TimeoutError):
            bale.recv(b)


def test_asyncio_streams_round_trip():
    region = bale.compact(RECORDS)

    async def main():
        received = asyncio.get_running_loop().create_future()

        async def handle(reader, writer):
            received.set_result(await bale.recv_async(reader))
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        await bale.send_async(writer, region)
        got = await asyncio.wait_for(received, 30)
        writer.close()
        server.close()
        await server.wait_closed()
        return got

    got = asyncio.run(main())
    assert bytes(got) == bytes(region)


def test_asyncio_early_close_and_oversize():
    data = bytes(bale.compact(RECORDS[:50]))

    async def feed(payload, **kw):
        reader = asyncio.StreamReader()
        reader.feed_data(payload)
        reader.feed_eof()
        return await bale.recv_async(reader, **kw)

    with pytest.raises(ConnectionError):
        asyncio.run(feed(data[:30]))
    with pytest.raises(ConnectionError):
        asyncio.run(feed(data[:-8]))
    with pytest.raises(bale.FormatError, match="max_size"):
        asyncio.run(feed(data, max_size=64))
    assert asyncio.run(feed(data)).root == RECORDS[:50]


def _attach_and_sum(handle):
    region = handle.attach()
    return sum(r["id"] for r in region.root), region.nbytes


def _shm_names():
    """Shared-memory segments (not the semaphores pools also keep there)."""
    if not os.path.isdir("/dev/shm"):
        return set()
    return {n for n in os.listdir("/dev/shm") if not n.startswith("sem.")}


def test_shared_memory_attach_in_a_spawned_process_and_unlink():
    before = _shm_names()
    region = bale.compact(RECORDS)
    with bale.share(region) as handle:
        assert handle.nbytes == region.nbytes
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(1) as pool:
            total, nbytes = pool.apply(_attach_and_sum, (handle,))
        assert total == sum(range(len(RECORDS)))
        assert nbytes == region.nbytes
        local = handle.attach()
    # Unlinked: the name is gone, the attached mapping still reads.
    assert not os.path.exists(os.path.join("/dev/shm", handle.name.lstrip("/")))
    assert local.root[123]["name"] == "n123"
    handle.unlink()  # idempotent
    # Nothing leaks: the creator's unlink removed the only segment, and the
    # attaching processes created none.
    assert _shm_names() == before


def test_sockets_and_shared_memory_load_on_first_use():
    """`import bale` leaves bale._net and bale._shm unloaded; their names still work."""
    code = (
        "import sys, bale\n"
        "print(sorted(m for m in ('bale._net', 'bale._shm') if m in sys.modules))\n"
        "from bale import recv, share\n"
        "print(bale.send.__module__, bale.SharedRegion.__module__, 'send_async' in dir(bale), share is bale.share)\n"
        "try:\n"
        "    bale.no_such_name\n"
        "except AttributeError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines() == [
        "[]",
        "bale._net bale._shm True True",
        "module 'bale' has no attribute 'no_such_name'",
    ]
