"""The commands of ``bale`` (parsing lives in ``bale.__main__``).

Each command raises ``CommandError`` (or a bale/OS error) with a message
naming the file and the problem; ``__main__`` prints it as one line.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import re
import sys
import time
from typing import IO, Any, Sequence

import bale

FORMATS = {
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".msgpack": "msgpack",
    ".mpk": "msgpack",
    ".csv": "csv",
    ".pkl": "pickle",
    ".pickle": "pickle",
}


class CommandError(Exception):
    """A problem with the command's input, reported as one line."""


# --- progress -----------------------------------------------------------------


class Progress:
    """A progress line on stderr with throughput and ETA, only on a terminal."""

    def __init__(self, label: str, total: int | None) -> None:
        self.label, self.total = label, total
        self.enabled = sys.stderr.isatty()
        self.start = self.last = time.monotonic()

    def update(self, done: int | None, items: int | None = None) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < 0.2:
            return
        self.last = now
        if done is None:  # only an item count is known
            sys.stderr.write(f"\r{self.label}: {items or 0:,} items, {now - self.start:,.1f} s" + " " * 4)
            sys.stderr.flush()
            return
        rate = done / max(now - self.start, 1e-9)
        parts = [f"{self.label}: {done / 1e6:,.1f} MB", f"{rate / 1e6:,.1f} MB/s"]
        if items is not None:
            parts.append(f"{items:,} items")
        if self.total:
            parts.insert(1, f"{100 * done / self.total:5.1f}%")
            parts.append(f"ETA {max(self.total - done, 0) / max(rate, 1):,.0f} s")
        sys.stderr.write("\r" + ", ".join(parts) + " " * 4)
        sys.stderr.flush()

    def run(self, work: Any, nbytes: int) -> Any:
        """Runs ``work()`` (which releases the GIL) on a thread, showing the
        elapsed time meanwhile; on a terminal, ends with its throughput."""
        if not self.enabled:
            return work()
        import threading

        result: list[Any] = []

        def target() -> None:
            try:
                result.append((True, work()))
            except BaseException as e:  # re-raised below, in the caller's thread
                result.append((False, e))

        t = threading.Thread(target=target, daemon=True)
        t.start()
        while t.is_alive():
            t.join(0.2)
            elapsed = time.monotonic() - self.start
            sys.stderr.write(f"\r{self.label}: {nbytes / 1e6:,.1f} MB, {elapsed:,.1f} s elapsed" + " " * 4)
            sys.stderr.flush()
        ok, value = result[0]
        if not ok:
            raise value
        elapsed = max(time.monotonic() - self.start, 1e-9)
        sys.stderr.write(f"\r{self.label}: {nbytes / 1e6:,.1f} MB in {elapsed:,.1f} s ({nbytes / elapsed / 1e6:,.0f} MB/s)\n")
        return value

    def finish(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 79 + "\r")
            sys.stderr.flush()


# --- convert ------------------------------------------------------------------


def input_format(path: str, given: str | None) -> str:
    if given:
        return given
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise CommandError(f"{path}: cannot tell the format from the extension {ext or '(none)'!r}; use --from")
    return FORMATS[ext]


def convert(
    src: str,
    dst: str,
    fmt: str | None,
    unsafe_pickle: bool,
    *,
    csv_types: str = "json",
    csv_column_types: dict[str, str] | None = None,
) -> str:
    """Converts ``src`` to a region file ``dst``; returns a one-line summary.

    CSV cells are read as ``csv_types`` says (``"json"``: JSON numbers
    become ints and floats; ``"none"``: every cell stays text), except in
    the columns ``csv_column_types`` names (``{"zip": "str", "score":
    "float"}``; types in ``CSV_COLUMN_TYPES``): see ``CsvCells``."""
    fmt = input_format(src, fmt)
    if fmt == "pickle" and not unsafe_pickle:
        raise CommandError(f"{src}: reading pickle runs code from the file; pass --unsafe-pickle if you trust it")
    cells = CsvCells(csv_types, csv_column_types or {})
    if fmt != "csv" and (csv_types != "json" or csv_column_types):
        raise CommandError(f"{src}: --csv-types and --csv-column-type apply to CSV input only (this is {fmt})")
    # Problems with the output named before the input is read.
    if os.path.isdir(dst):
        raise CommandError(f"{dst}: {os.strerror(errno.EISDIR)}")
    if not os.path.isdir(os.path.dirname(dst) or "."):
        raise CommandError(f"{dst}: {os.strerror(errno.ENOENT)} (no directory {os.path.dirname(dst)})")
    progress = None
    try:
        size = os.path.getsize(src)
        progress = Progress(f"converting {os.path.basename(src)}", size)
        if fmt == "jsonl":
            count = _convert_lines(src, dst, progress)
        elif fmt == "csv":
            count = _convert_csv(src, dst, progress, cells)
        elif fmt == "json":
            count = _convert_json(src, dst, progress)
        else:
            value = _read_whole(src, fmt)
            bale.compact(value).save(dst)
            count = len(value) if isinstance(value, (list, dict)) else 1
    except OSError as e:
        # Name the file (input or output) with the system's reason, as one line.
        if e.filename is None or not e.strerror:
            raise
        raise CommandError(f"{e.filename}: {e.strerror}") from None
    finally:
        if progress is not None:
            progress.finish()
    return f"{dst}: {count:,} items, {os.path.getsize(dst):,} bytes (from {size:,} bytes of {fmt})"


def _read_whole(src: str, fmt: str) -> Any:
    with open(src, "rb") as f:
        data = f.read()
    if fmt == "json":
        try:
            return json.loads(data)
        except json.JSONDecodeError as e:
            raise CommandError(f"{src}: line {e.lineno} column {e.colno}: malformed JSON ({e.msg})") from None
        except UnicodeDecodeError as e:
            raise CommandError(f"{src}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    if fmt == "msgpack":
        try:
            import msgspec
        except ImportError:
            raise CommandError("reading MessagePack needs msgspec (pip install msgspec)") from None
        try:
            return msgspec.msgpack.decode(data)
        except msgspec.DecodeError as e:
            raise CommandError(f"{src}: malformed MessagePack ({e})") from None
    if fmt == "pickle":
        import pickle

        return pickle.loads(data)
    raise CommandError(f"{src}: unknown format {fmt!r}")


def _convert_lines(src: str, dst: str, progress: Progress) -> int:
    count = 0
    with open(src, "rb") as f, bale.Writer(dst) as w:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                w.append_json(line)
            except json.JSONDecodeError as e:
                raise CommandError(f"{src}: line {lineno}: malformed JSON ({e.msg} at column {e.colno})") from None
            except UnicodeDecodeError as e:
                raise CommandError(f"{src}: line {lineno}: not UTF-8 text ({e.reason})") from None
            count += 1
            if count % 4096 == 0:
                progress.update(f.tell(), count)
    return count


def _convert_json(src: str, dst: str, progress: Progress) -> int:
    """A top-level array (or object) is parsed one element (or member) at a
    time by an incremental parser and written on at once: memory holds the
    largest element, not the file. Any other top-level value is read whole."""
    whole: list[str] = []
    count = 0

    def item(text: bytes) -> None:
        nonlocal count
        w.append_json(text)
        count += 1
        if count % 4096 == 0:
            progress.update(None, count)

    def entry(key: str, text: bytes) -> None:
        nonlocal count
        try:
            w.set_json(key, text)
        except KeyError:
            raise CommandError(f"{src}: key {key!r} appears twice in the top-level object") from None
        count += 1
        if count % 4096 == 0:
            progress.update(None, count)

    with bale.Writer(dst) as w:
        try:
            kind, count = bale._bale.stream_json(src, item, entry, whole.append)
        except ValueError as e:
            if isinstance(e, bale.CompactError) or not str(e).startswith(src):
                raise
            raise CommandError(str(e)) from None
        except UnicodeDecodeError as e:
            raise CommandError(f"{src}: element {count}: not UTF-8 text ({e.reason})") from None
        if kind == "value" or count == 0:
            # A scalar, or an empty array or object: written whole.
            w.abort()
    if kind == "value" or count == 0:
        if kind == "value":
            bale.compact_json(whole[0]).save(dst)
        else:
            bale.compact([] if kind == "array" else {}).save(dst)
        return 1 if kind == "value" else 0
    return count


#: How cells of CSV columns without a declared type are read (``--csv-types``).
CSV_TYPES = ("json", "none")
#: The types a CSV column can be declared to have (``--csv-column-type NAME=TYPE``).
CSV_COLUMN_TYPES = ("int", "float", "str", "bool")

# A JSON number, and nothing else: no leading zeros, sign "+", "_", spaces,
# "inf"/"nan" words or hexadecimal (str patterns: [0-9] is ASCII only).
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_INT = re.compile(r"[+-]?[0-9]+")
# What float() reads, without "_" or surrounding spaces.
_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE)
_BOOLS = {"true": True, "false": False, "1": True, "0": False}


def json_number_or_text(text: str) -> Any:
    """A CSV cell under ``--csv-types json``: a JSON number becomes an int
    (no fraction or exponent) or a float; an empty cell is None; anything
    else stays text, and so does a number a float cannot hold (``1e400``
    would be inf) or an int too long for ``int()`` (past
    ``sys.get_int_max_str_digits()``), so that nothing is lost."""
    if text == "":
        return None
    m = _JSON_NUMBER.fullmatch(text)
    if m is None:
        return text
    if m.group(1) is None and m.group(2) is None:
        try:
            return int(text)
        except ValueError:
            return text
    f = float(text)
    return f if math.isfinite(f) else text


def _declared(kind: str, text: str) -> Any:
    """A cell of a column declared ``kind``; raises ValueError naming what it expected."""
    if kind == "str":
        return text
    if text == "":
        return None
    if kind == "int" and _INT.fullmatch(text):
        return int(text)
    if kind == "float" and _FLOAT.fullmatch(text):
        return float(text)
    if kind == "bool" and text.lower() in _BOOLS:
        return _BOOLS[text.lower()]
    expected = {"int": "an int", "float": "a float", "bool": "a bool (true, false, 1 or 0)"}[kind]
    raise ValueError(f"{text!r} is not {expected}")


class CsvCells:
    """How the cells of a CSV file become values.

    ``types`` is ``"json"`` (the default: JSON numbers become ints and
    floats, see ``json_number_or_text``; empty cells None) or ``"none"``
    (every cell stays text; an empty cell is ``""``). ``columns`` maps
    column names to ``"int"``, ``"float"``, ``"str"`` or ``"bool"``, which
    take precedence: an int is an optional sign and digits (leading zeros
    allowed), a float what ``float()`` reads (``nan``, ``inf``, ``1e400``
    as inf included) without ``_`` or spaces, a bool ``true``/``false``
    (any case), ``1`` or ``0``; an empty cell is None, except in a ``str``
    column, where every cell stays text. A cell that does not parse is an
    error naming the file, line and column.
    """

    def __init__(self, types: str = "json", columns: dict[str, str] | None = None) -> None:
        if types not in CSV_TYPES:
            raise CommandError(f"unknown CSV cell types {types!r}: one of {', '.join(CSV_TYPES)}")
        columns = dict(columns or {})
        for name, kind in columns.items():
            if kind not in CSV_COLUMN_TYPES:
                raise CommandError(f"column {name!r}: unknown type {kind!r}: one of {', '.join(CSV_COLUMN_TYPES)}")
        self.types, self.columns = types, columns

    def check_header(self, src: str, fields: Sequence[str] | None) -> None:
        missing = [name for name in self.columns if name not in (fields or [])]
        if missing:
            have = ", ".join(repr(f) for f in fields or []) or "none"
            raise CommandError(f"{src}: line 1: no column {missing[0]!r} (declared with --csv-column-type) in the header (columns: {have})")

    def row(self, src: str, line: int, row: dict[Any, Any]) -> dict[Any, Any]:
        out = {}
        for k, v in row.items():
            if not isinstance(v, str):  # a short row's missing cells (None), a long row's extra ones (a list)
                out[k] = v
            elif k in self.columns:
                try:
                    out[k] = _declared(self.columns[k], v)
                except ValueError as e:
                    raise CommandError(f"{src}: line {line}, column {k!r}: {e} (declared {self.columns[k]})") from None
            elif self.types == "json":
                out[k] = json_number_or_text(v)
            else:
                out[k] = v
        return out


def _convert_csv(src: str, dst: str, progress: Progress, cells: CsvCells | None = None) -> int:
    cells = cells or CsvCells()
    count = 0
    with open(src, "rb") as raw, io.TextIOWrapper(raw, encoding="utf-8", newline="") as f, bale.Writer(dst) as w:
        try:
            reader = csv.DictReader(f)
            cells.check_header(src, reader.fieldnames)
            for row in reader:
                w.append(cells.row(src, reader.line_num, row))
                count += 1
                if count % 4096 == 0:
                    progress.update(raw.tell(), count)
        except csv.Error as e:
            raise CommandError(f"{src}: line {count + 2}: malformed CSV ({e})") from None
        except UnicodeDecodeError as e:
            raise CommandError(f"{src}: not UTF-8 text ({e.reason})") from None
    return count


# --- reading ------------------------------------------------------------------


def open_region(path: str, verify: bool = False) -> bale.Region:
    if not os.path.exists(path):
        raise CommandError(f"{path}: no such file")
    try:
        return bale.open(path, verify=verify)
    except bale.FormatError as e:
        text = str(e)
        raise CommandError(text if text.startswith(path) else f"{path}: {text}") from None


def pointer_parts(pointer: str) -> list[str]:
    """The reference tokens of an RFC 6901 JSON Pointer."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise CommandError(f"JSON pointer {pointer!r} must be empty or start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]


def resolve(region: bale.Region, path: str, pointer: str) -> tuple[Any, str]:
    """The value at ``pointer`` and its place as ``to_json`` names places
    (``root[1]["a"]``), so that errors about it name the same place."""
    return resolve_in(region.root, "root", path, pointer)


def resolve_in(value: Any, place: str, path: str, pointer: str) -> tuple[Any, str]:
    """The value at ``pointer`` inside ``value`` (whose place is ``place``)."""
    where = ""
    for part in pointer_parts(pointer):
        where += "/" + part.replace("~", "~0").replace("/", "~1")
        if isinstance(value, bale.DictView):
            if part in value:
                value = value[part]
                place += f"[{json.dumps(part, ensure_ascii=False)}]"
                continue
            # Keys that are ints (or other scalars) are written as text in pointers.
            match = next((k for k in value if not isinstance(k, str) and json.dumps(k) == part), _MISSING)
            if match is _MISSING:
                raise CommandError(f"{path}: no value at {where} (no key {part!r})")
            value = value[match]
            place += f"[{match!r}]"
        elif isinstance(value, _SEQUENCE_VIEWS):
            if not (part.isdigit() and (part == "0" or not part.startswith("0"))):
                raise CommandError(f"{path}: no value at {where} ({part!r} is not an array index)")
            i = int(part)
            if i >= len(value):
                raise CommandError(f"{path}: no value at {where} (index {i} is past the end, length {len(value)})")
            value = value[i]
            place += f"[{i}]"
        else:
            raise CommandError(f"{path}: no value at {where} (the value before it is a {type(value).__name__}, not a container)")
    return value, place


_MISSING = object()
_SEQUENCE_VIEWS = (bale.ListView, bale.NumberListView, bale.TupleView)


def json_bytes(value: Any, path: str, place: str = "root") -> bytes:
    """``bale.to_json(value)``; an error names the file and the value's place
    in the file's root (``to_json`` names places from the value it is given)."""
    try:
        return bale.to_json(value)
    except ValueError as e:
        text = str(e)
        if text.startswith("root"):
            text = place + text[len("root"):]
        raise CommandError(f"{path}: {text}") from None


def get(path: str, pointer: str, raw: bool, out: IO[bytes]) -> None:
    value, place = resolve(open_region(path), path, pointer)
    if raw and isinstance(value, str):
        out.write(value.encode("utf-8", "surrogatepass") + b"\n")
    else:
        out.write(json_bytes(value, path, place) + b"\n")


#: JSON of a list's items held back before anything is written (see to_json).
HOLD_BYTES = 32 << 20


def to_json(path: str, pointer: str, out: IO[bytes], hold_bytes: int = HOLD_BYTES) -> None:
    """Writes JSON of the value, and nothing at all when some part of it has
    no JSON form: a list's items are converted one by one, and their JSON is
    held until every item is known to convert; beyond ``hold_bytes``, the
    remaining items are checked first, then converted again as they are
    written (memory stays bounded; the largest outputs cost a second pass)."""
    value, place = resolve(open_region(path), path, pointer)
    if not isinstance(value, (bale.ListView, bale.TupleView)):
        out.write(json_bytes(value, path, place) + b"\n")
        return
    held: list[bytes] = []
    size = 0
    for i, item in enumerate(value):
        text = json_bytes(item, path, f"{place}[{i}]")
        if size <= hold_bytes:
            held.append(text)
            size += len(text) + 1
    # Every item converts: now the output is written.
    out.write(b"[")
    buf = io.BytesIO()
    for i in range(len(value)):
        if i:
            buf.write(b",")
        buf.write(held[i] if i < len(held) else json_bytes(value[i], path, f"{place}[{i}]"))
        if buf.tell() > 1 << 20:
            out.write(buf.getvalue())
            buf = io.BytesIO()
    out.write(buf.getvalue() + b"]\n")


def _kind_of_root(root: Any) -> str:
    if isinstance(root, (bale.ListView, bale.NumberListView)):
        return f"list of {len(root):,}"
    if isinstance(root, bale.TupleView):
        return f"tuple of {len(root):,}"
    if isinstance(root, bale.DictView):
        return f"dict of {len(root):,} keys"
    if isinstance(root, (bale.SetView, bale.FrozenSetView)):
        return f"{type(root).__name__.removesuffix('View').lower()} of {len(root):,}"
    return type(root).__name__


def info(path: str, verify: bool, out: IO[str]) -> None:
    region = open_region(path)
    header = bytes(memoryview(region)[:64])
    flags = int.from_bytes(header[40:44], "little")
    names = [n for bit, n in ((1, "SHARED"), (2, "CYCLIC")) if flags & bit]
    lines = [
        f"file: {path}",
        f"format version: {int.from_bytes(header[8:12], 'little')}",
        f"size: {region.nbytes:,} bytes",
        f"flags: {', '.join(names) if names else 'none'}",
    ]
    try:
        lines.append(f"root: {_kind_of_root(region.root)}")
    except bale.FormatError as e:
        lines.append(f"root: unreadable ({e})")
    if verify:
        progress = Progress(f"verifying {os.path.basename(path)}", None)
        try:
            progress.run(region.verify, region.nbytes)
            lines.append("checksum and structure: verified")
        except bale.FormatError as e:
            lines.append(f"checksum and structure: FAILED: {e}")
        finally:
            progress.finish()
    else:
        lines.append("checksum and structure: not checked (use --verify)")
    try:
        stats = bale._bale.region_stats(region, top=5)
    except bale.FormatError as e:
        lines.append(f"contents: unreadable ({e})")
        out.write("\n".join(lines) + "\n")
        raise CommandError(f"{path}: malformed region: {e}") from None
    lines.append("")
    # As wide as the longest kind's name, so that the numbers line up.
    width = max([26, *(len(kind) for kind in stats["kinds"])])
    lines.append(f"{'kind':{width}s} {'count':>14s} {'bytes':>16s}")
    for kind, (count, nbytes) in sorted(stats["kinds"].items(), key=lambda kv: -kv[1][1]):
        lines.append(f"{kind:{width}s} {count:>14,} {nbytes:>16,}")
    lines.append("")
    lines.append(f"dict shapes: {stats['distinct_shapes']:,} distinct; most used:")
    for uses, keys in stats["shapes"]:
        shown = ", ".join(repr(k) for k in keys[:12]) + (", ..." if len(keys) > 12 else "")
        lines.append(f"  {uses:>12,} dicts  [{shown}]")
    if stats["types"]:
        lines.append("")
        lines.append(f"record types: {len(stats['types']):,}")
        for name, kind, fields, count in stats["types"]:
            lines.append(f"  {count:>12,} x {name} ({kind}: {', '.join(fields)})")
    out.write("\n".join(lines) + "\n")


def verify(path: str, out: IO[str]) -> None:
    region = open_region(path)
    progress = Progress(f"verifying {os.path.basename(path)}", None)
    try:
        progress.run(region.verify, region.nbytes)
    except bale.FormatError as e:
        raise CommandError(f"{path}: invalid: {e}") from None
    finally:
        progress.finish()
    out.write(f"{path}: OK ({region.nbytes:,} bytes, checksum and structure verified)\n")


# --- bale store ---------------------------------------------------------------


def open_store(path: str, readonly: bool = True) -> bale.Store:
    if not os.path.exists(path):
        raise CommandError(f"{path}: no such store")
    if not os.path.isdir(path):
        raise CommandError(f"{path}: not a store (a store is a directory)")
    return bale.Store(path, readonly=readonly)


def store_key(text: str) -> str | bytes:
    """A key as typed: text, or ``b'...'`` (a Python bytes literal) for a bytes key."""
    if text.startswith(("b'", 'b"')) and text.endswith(text[1]) and len(text) >= 3:
        import ast

        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise CommandError(f"key {text!r} looks like a bytes literal but is not one") from None
    return text


def store_info(path: str, out: IO[str]) -> None:
    with open_store(path) as s:
        info = s.info()
    labels = ", ".join(f"{'(none)' if k is None else k}: {v:,}" for k, v in sorted(info["labels"].items(), key=lambda kv: (kv[0] is not None, kv[0] or ""))) or "none"
    lines = [
        f"store: {path}",
        f"generation: {info['generation']:,}",
        f"values: {info['values']:,}",
        f"labels: {labels}",
        f"segments: {info['segments']:,} ({info['segment_bytes']:,} bytes), {info['held_segments']:,} held for "
        f"{info['references']:,} reference(s) between segments; {info['freed_segments']:,} freed, their files kept "
        "for readers of older commits",
        f"index: {len(info['index_files'])} file(s) of {', '.join(f'{n:,}' for n in info['index_files']) or '0'} entries, {info['delta_entries']:,} in the commit record",
        f"disk: {info['disk_bytes']:,} bytes",
    ]
    out.write("\n".join(lines) + "\n")


def store_keys(path: str, out: IO[str]) -> None:
    with open_store(path) as s:
        for key in s:
            out.write((key if isinstance(key, str) else repr(key)) + "\n")


def store_get(path: str, key: str, pointer: str, raw: bool, out: IO[bytes]) -> None:
    with open_store(path) as s:
        k = store_key(key)
        if k not in s:
            raise CommandError(f"{path}: no key {k!r}")
        value, place = resolve_in(s[k], f"[{k!r}]", path, pointer)
        if raw and isinstance(value, str):
            out.write(value.encode("utf-8", "surrogatepass") + b"\n")
        else:
            out.write(json_bytes(value, path, place) + b"\n")


def store_verify(path: str, out: IO[str]) -> None:
    with open_store(path) as s:
        progress = Progress(f"verifying {os.path.basename(path)}", None)
        try:
            counts = s.verify(progress=lambda done, total: progress.update(None, done))
        except bale.FormatError as e:
            raise CommandError(f"invalid: {e}") from None
        finally:
            progress.finish()
    out.write(
        f"{path}: OK ({counts['values']:,} values in {counts['segments']:,} segments, "
        f"{counts['segment_bytes']:,} bytes checksummed, {counts['index_files']} index file(s) verified)\n"
    )


def store_reclaim(path: str, out: IO[str]) -> None:
    with open_store(path, readonly=False) as s:
        freed = s.reclaim()
        left = s.info()["disk_bytes"]
    out.write(f"{path}: {freed:,} bytes freed, {left:,} bytes in use\n")


def bench(args: list[str]) -> int:
    """Runs the repository's benchmark suite (benchmarks/run_all.py) with ``args``; returns its exit status."""
    import subprocess

    here = os.path.abspath(os.getcwd())
    while True:
        script = os.path.join(here, "benchmarks", "run_all.py")
        if os.path.exists(script):
            break
        parent = os.path.dirname(here)
        if parent == here:
            raise CommandError("benchmarks/run_all.py not found here or above: run bale bench in a checkout of the bale repository")
        here = parent
    return subprocess.run([sys.executable, script, *args]).returncode
