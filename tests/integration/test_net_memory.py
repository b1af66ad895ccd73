"""What a peer can cost a receiver (issue 17 item 8).

A 64-byte header can announce up to ``max_size`` bytes (1 GiB by default);
the receiver's memory must follow the bytes that actually arrive. Each case
runs in a fresh child process over a real loopback TCP connection, and the
assertion is on the child's peak resident set (``ru_maxrss``): a receiver
that allocated (and zeroed) what the header announces would add 1 GiB to it.
The child also caps its address space, so such a receiver fails with
MemoryError instead of taking the machine's memory.
"""

import asyncio
import socket
import struct
import subprocess
import sys
import textwrap
import threading

import pytest

import bale

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and ru_maxrss in KiB")

GIB = 1 << 30
SENT = 64 * 1024
LIMIT_KIB = 8 * 1024  # the receiver may hold 128 KiB; allow interpreter noise

CHILD_PRELUDE = r"""
import asyncio, resource, socket, struct, sys, threading
import bale

GIB = 1 << 30
SENT = 64 * 1024

def header_announcing(total):
    head = bytearray(bytes(bale.compact([1, 2, 3]))[:64])
    struct.pack_into("<Q", head, 16, total)
    return bytes(head)

def peak_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

def vm_kib():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[0])
    return pages * resource.getpagesize() // 1024

def pair():
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    conn, _ = server.accept()
    server.close()
    return client, conn

# Warm up: a whole region over a socket, so every code path and buffer the
# receiver uses has been touched once before the baseline.
a, b = pair()
small = bale.compact(list(range(20_000)))
bale.send(a, small)
assert bale.recv(b).root == list(range(20_000))
a.close(); b.close()
# Room for the threads and buffers the test needs, far below 1 GiB.
resource.setrlimit(resource.RLIMIT_AS, ((vm_kib() + 256 * 1024) * 1024, resource.RLIM_INFINITY))
base = peak_kib()
"""


def run_child(body):
    code = CHILD_PRELUDE + textwrap.dedent(body) + "\nprint('GROWTH_KIB', peak_kib() - base)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    growth = int(proc.stdout.split("GROWTH_KIB")[1].split()[0])
    return proc.stdout, growth


def test_recv_peer_announces_1gib_sends_64kib_then_closes():
    out, growth = run_child(
        """
        a, b = pair()
        a.sendall(header_announcing(GIB) + bytes(SENT))
        a.close()
        try:
            bale.recv(b)
        except ConnectionError as e:
            print("closed:", e)
        """
    )
    assert f"closed: peer closed the connection after {64 + SENT} of {GIB} bytes" in out
    assert growth < LIMIT_KIB, f"receiver's peak RSS rose by {growth} KiB"


def test_recv_peer_announces_1gib_sends_64kib_then_stalls():
    out, growth = run_child(
        """
        a, b = pair()
        a.sendall(header_announcing(GIB) + bytes(SENT))
        b.settimeout(1.0)  # the stalled peer keeps its socket open
        try:
            bale.recv(b)
        except TimeoutError:
            print("stalled")
        a.close()
        """
    )
    assert "stalled" in out
    assert growth < LIMIT_KIB, f"receiver's peak RSS rose by {growth} KiB"


def test_three_idle_peers_cost_little():
    """The issue's scenario: three clients announce 1 GiB each and go idle."""
    out, growth = run_child(
        """
        results = []
        def serve(b):
            b.settimeout(1.0)
            try:
                bale.recv(b)
            except TimeoutError:
                results.append("stalled")
        pairs = [pair() for _ in range(3)]
        for a, _ in pairs:
            a.sendall(header_announcing(GIB) + bytes(SENT))
        threads = [threading.Thread(target=serve, args=(b,)) for _, b in pairs]
        for t in threads: t.start()
        for t in threads: t.join()
        print("stalled:", len(results))
        """
    )
    assert "stalled: 3" in out
    assert growth < 3 * LIMIT_KIB, f"receiver's peak RSS rose by {growth} KiB"


def test_recv_async_peer_announces_1gib_sends_64kib_then_closes_or_stalls():
    out, growth = run_child(
        """
        async def main():
            outcomes = []
            done = asyncio.Event()
            async def handle(reader, writer):
                try:
                    await asyncio.wait_for(bale.recv_async(reader), 1.0)
                except ConnectionError:
                    outcomes.append("closed")
                except asyncio.TimeoutError:
                    outcomes.append("stalled")
                writer.close()
                if len(outcomes) == 2:
                    done.set()
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            r1, w1 = await asyncio.open_connection("127.0.0.1", port)
            r2, w2 = await asyncio.open_connection("127.0.0.1", port)
            for w in (w1, w2):
                w.write(header_announcing(GIB) + bytes(SENT))
                await w.drain()
            w1.close()              # closes early
            await done.wait()       # w2 stalls until the receiver gives up
            w2.close()
            server.close()
            await server.wait_closed()
            print("outcomes:", sorted(outcomes))
        asyncio.run(main())
        """
    )
    assert "outcomes: ['closed', 'stalled']" in out
    assert growth < LIMIT_KIB, f"receiver's peak RSS rose by {growth} KiB"


# ---------------------------------------------------------------------------
# Whole regions still arrive intact whatever the pieces they arrive in
# ---------------------------------------------------------------------------

SIZES = [1, 100, 8_000, 8_190, 8_200, 70_000, 600_000]  # list lengths around the 64 KiB first buffer and its doublings


def _tcp_pair():
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    conn, _ = server.accept()
    server.close()
    for s in (client, conn):
        s.settimeout(30)
    return client, conn


def _send_in_pieces(sock, data, piece):
    for i in range(0, len(data), piece):
        sock.sendall(data[i : i + piece])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("piece", [1000, 65_536, 1 << 22])
def test_recv_reassembles_regions_sent_in_pieces(n, piece):
    value = list(range(n))
    data = bytes(bale.compact(value))
    a, b = _tcp_pair()
    with a, b:
        t = threading.Thread(target=_send_in_pieces, args=(a, data, piece))
        t.start()
        got = bale.recv(b)
        t.join()
    assert got.nbytes == len(data)
    assert bytes(got) == data
    assert got.root == value


@pytest.mark.parametrize("n", SIZES)
def test_recv_async_reassembles_regions_sent_in_pieces(n):
    value = [str(i) for i in range(n)]
    data = bytes(bale.compact(value))

    async def main():
        reader = asyncio.StreamReader()

        async def feed():
            for i in range(0, len(data), 7_000):
                reader.feed_data(data[i : i + 7_000])
                await asyncio.sleep(0)
            reader.feed_eof()

        feeder = asyncio.ensure_future(feed())
        got = await bale.recv_async(reader)
        await feeder
        return got

    got = asyncio.run(main())
    assert got.nbytes == len(data)
    assert bytes(got) == data
    assert got.root == value


def test_recv_refuses_more_than_max_size_before_reading_the_body():
    a, b = _tcp_pair()
    with a, b:
        head = bytearray(bytes(bale.compact([1]))[:64])
        struct.pack_into("<Q", head, 16, GIB + 8)
        a.sendall(bytes(head))
        with pytest.raises(bale.FormatError, match="max_size"):
            bale.recv(b)
