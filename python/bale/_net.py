"""Regions over sockets and asyncio streams.

A region needs no framing of its own: its 64-byte header carries its total
length. Sending writes the region's memory as it is (no copy); receiving
reads the header, checks it, then reads the rest into one ``bytearray`` that
becomes the region itself (``load`` takes it without a copy). Data from a
socket is untrusted, so it is verified by default, and a forged length above
``max_size`` is refused before anything is allocated.

What a peer can cost the receiver: memory follows the bytes that actually
arrive, not the length the header announces. The buffer starts at 64 KiB
(or the announced length, if smaller) and doubles as it fills, never past the
announced length, so a peer that announces up to ``max_size`` and sends ``k``
bytes makes the receiver hold at most ``max(64 KiB, 2 k)`` bytes (plus, for
the moment of each doubling, a zeroed block of the added size). A peer that
sends a whole region of ``n`` bytes costs ``n`` bytes (the final buffer is
exactly the region) and the doubling copies move fewer than ``n`` bytes in
all. A peer that stalls holds that memory as long as the receiver waits:
bound the wait with a socket timeout (``sock.settimeout``) or
``asyncio.wait_for``; a peer that closes early makes ``recv`` raise
``ConnectionError`` and the partial buffer is freed.
"""

from __future__ import annotations

from bale._bale import HEADER_LEN, FormatError, Region, announced_length, load

# socket and asyncio appear in annotations only: importing bale stays light
# (type checkers read this constant by name, without importing typing).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    import socket

#: Largest region ``recv``/``recv_async`` accept unless told otherwise.
DEFAULT_MAX_SIZE = 1 << 30

#: Size of the receive buffer before any byte after the header has arrived.
_FIRST_BUFFER = 1 << 16

#: Largest read asked of an asyncio stream at once.
_ASYNC_CHUNK = 1 << 20


def _check_size(total: int, max_size: int) -> None:
    if total > max_size:
        raise FormatError(
            f"peer announced a region of {total} bytes, larger than max_size={max_size}; "
            "pass a larger max_size to accept it"
        )


def _grow(buf: bytearray, total: int) -> None:
    """Doubles ``buf`` (at least to 64 KiB, at most to ``total`` bytes).

    A resize to at least twice the allocation allocates exactly the size
    asked for, so once ``len(buf) == total`` the buffer holds no spare room.
    """
    new = min(total, max(2 * len(buf), _FIRST_BUFFER))
    buf += bytes(new - len(buf))


def _closed(got: int, total: int) -> ConnectionError:
    return ConnectionError(f"peer closed the connection after {got} of {total} bytes of a region")


def send(sock: socket.socket, region: Region) -> None:
    """Send ``region`` on a connected socket, straight from its memory."""
    with memoryview(region) as view:
        sock.sendall(view)


def recv(sock: socket.socket, *, verify: bool = True, max_size: int = DEFAULT_MAX_SIZE) -> Region:
    """Receive one region sent with ``send``. Blocks as the socket does
    (set a timeout on the socket to bound the wait). Memory grows with the
    bytes received, not with the length the peer announces."""
    buf = bytearray(HEADER_LEN)
    got = 0
    while got < HEADER_LEN:
        with memoryview(buf) as view:
            n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError(f"peer closed the connection after {got} of {HEADER_LEN} header bytes")
        got += n
    total = announced_length(bytes(buf))
    _check_size(total, max_size)
    while got < total:
        if got == len(buf):
            _grow(buf, total)
        with memoryview(buf) as view:
            n = sock.recv_into(view[got:])
        if n == 0:
            raise _closed(got, total)
        got += n
    return load(buf, verify=verify)


async def send_async(writer: asyncio.StreamWriter, region: Region) -> None:
    """Write ``region`` to an asyncio stream and wait until it is flushed."""
    writer.write(memoryview(region))
    await writer.drain()


async def recv_async(
    reader: asyncio.StreamReader, *, verify: bool = True, max_size: int = DEFAULT_MAX_SIZE
) -> Region:
    """Read one region from an asyncio stream (see ``recv``)."""
    import asyncio

    try:
        head = await reader.readexactly(HEADER_LEN)
    except asyncio.IncompleteReadError as e:
        raise ConnectionError(
            f"peer closed the connection after {len(e.partial)} of {HEADER_LEN} header bytes"
        ) from None
    total = announced_length(head)
    _check_size(total, max_size)
    buf = bytearray(head)
    got = HEADER_LEN
    while got < total:
        chunk = await reader.read(min(total - got, _ASYNC_CHUNK))
        if not chunk:
            raise _closed(got, total)
        while len(buf) < got + len(chunk):
            _grow(buf, total)
        buf[got : got + len(chunk)] = chunk
        got += len(chunk)
    return load(buf, verify=verify)
