"""Regions over sockets and asyncio streams.

A region needs no framing of its own: its 64-byte header carries its total
length. Sending writes the region's memory as it is (no copy); receiving
reads the header, checks it, allocates one buffer of the final size and reads
the rest into it. Data from a socket is untrusted, so it is verified by
default, and a forged length above ``max_size`` is refused before anything is
allocated.
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


def _check_size(total: int, max_size: int) -> None:
    if total > max_size:
        raise FormatError(
            f"peer announced a region of {total} bytes, larger than max_size={max_size}; "
            "pass a larger max_size to accept it"
        )


def send(sock: socket.socket, region: Region) -> None:
    """Send ``region`` on a connected socket, straight from its memory."""
    with memoryview(region) as view:
        sock.sendall(view)


def _recv_into(sock: socket.socket, view: memoryview, got: int, total: int) -> None:
    while got < total:
        n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError(f"peer closed the connection after {got} of {total} bytes of a region")
        got += n


def recv(sock: socket.socket, *, verify: bool = True, max_size: int = DEFAULT_MAX_SIZE) -> Region:
    """Receive one region sent with ``send``. Blocks as the socket does
    (set a timeout on the socket to bound the wait)."""
    head = bytearray(HEADER_LEN)
    with memoryview(head) as view:
        _recv_into(sock, view, 0, HEADER_LEN)
    total = announced_length(bytes(head))
    _check_size(total, max_size)
    buf = bytearray(total)
    buf[:HEADER_LEN] = head
    with memoryview(buf) as view:
        _recv_into(sock, view, HEADER_LEN, total)
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
    buf = bytearray(total)
    buf[:HEADER_LEN] = head
    got = HEADER_LEN
    while got < total:
        chunk = await reader.read(min(total - got, 1 << 20))
        if not chunk:
            raise ConnectionError(f"peer closed the connection after {got} of {total} bytes of a region")
        buf[got : got + len(chunk)] = chunk
        got += len(chunk)
    return load(buf, verify=verify)
