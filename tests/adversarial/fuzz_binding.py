"""Coverage-guided fuzzing of bale through its Python binding (atheris).

    make fuzz-binding FUZZ_SECONDS=120
    .venv/bin/python tests/adversarial/fuzz_binding.py [libFuzzer options] [corpus dirs]
    .venv/bin/python tests/adversarial/fuzz_binding.py crash-file   # replay one input

Each input is the bytes of a region. The harness loads it without
verification and walks everything it can reach (thaw, repr, hash, == against
the thawed value and itself, iteration both ways, indexing, slicing, key and
element lookups, ``column``, ``to_json``, ``region_stats``), then loads it
with ``verify=True`` and, if that passes, walks it again. Allowed:

* unverified bytes: ``bale.FormatError`` and ``bale.ThawError`` anywhere;
* verified bytes: ``bale.ThawError`` only (a record names a class this
  process does not have), no ``FormatError`` at all;
* either way, the Python exceptions the same operations raise on native
  values, which no bytes can rule out: ``TypeError`` from ``hash`` of a
  tuple, frozenset or record holding something unhashable, from ``column``
  of items that are not dicts and from a lookup with an unhashable key;
  ``KeyError`` from ``column`` when an item lacks the key and from a lookup
  of a key that is not equal to itself (NaN); on unverified bytes only,
  ``KeyError`` (and ``in`` saying absent) for a key iteration listed (a
  damaged hash index: wrong data, which unverified reads may give);
  ``ValueError`` from
  ``to_json`` of what JSON cannot hold (its message names JSON), from
  ``==`` of containers holding numpy arrays (as on native values) and from
  ``repr`` of an int of more decimal digits than the interpreter converts
  (``sys.get_int_max_str_digits``, 4300 by default, as ``repr`` of the
  native int); ``decimal.InvalidOperation`` from a comparison (``==``,
  ``in``, ``index``) that meets a signaling NaN decimal, as the native
  ``Decimal`` raises it; and ``RecursionError`` from a recursive operation
  on data nested deeper than the interpreter's recursion limit.

Anything else (another exception type, a crash, a hang of more than
``-timeout`` seconds) is a finding: libFuzzer saves the input as
``crash-<sha1>`` (under ``-artifact_prefix``) and stops. The fuzzer runs in
a child process, so that a crash libFuzzer cannot catch (a C stack
overflow) still leaves its input behind, saved the same way, and so that
the time box goes on after a finding (see ``supervise``).

The mutator lets libFuzzer mutate, then (most of the time) restores the
header's magic, version, byte-order marker, flags and reserved bytes, rounds
the length to 8, writes it to ``total_len`` and recomputes the checksum, so
mutants reach the structure checks behind the checksum.

Coverage: atheris sees the Python code of ``bale`` it instruments; the Rust
extension is seen too when it was built with SanitizerCoverage (``make
fuzz-binding`` builds such a copy into ``target-fuzz`` and installs it into
``build-fuzz/site``, put first on ``sys.path`` via ``BALE_FUZZ_SITE``).
"""

from __future__ import annotations

import decimal
import os
import struct
import sys

if os.environ.get("BALE_FUZZ_SITE"):
    sys.path.insert(0, os.environ["BALE_FUZZ_SITE"])

HEADER_LEN = 64
MAGIC = b"BALE\r\n\x1a\n"
NODE_BUDGET = 400  # views visited per load
ITEMS = 24  # items read per container

_MISSING = object()

# What comparing native values raises too: `==` of a signaling NaN decimal.
COMPARE_ERRORS = (decimal.InvalidOperation,)

# Exploratory runs only: exception types (builtins, by name) tolerated on
# unverified bytes, e.g. BALE_FUZZ_TOLERATE=TypeError,IndexError to look past
# a known, open finding. Empty by default (make fuzz-binding, CI).
TOLERATED = tuple(
    getattr(__import__("builtins"), n) for n in os.environ.get("BALE_FUZZ_TOLERATE", "").split(",") if n
)


class Finding(Exception):
    """An outcome the promises rule out (other than an unexpected exception)."""


# ---------------------------------------------------------------------------
# Mutator
# ---------------------------------------------------------------------------


def _checksum(b: bytearray) -> int:
    import xxhash

    saved = bytes(b[32:40])
    b[32:40] = bytes(8)
    h = xxhash.xxh3_64_intdigest(bytes(b))
    b[32:40] = saved
    return h


def fix_header(data: bytes, seed: int) -> bytes:
    """Most mutants get a plausible header, their length and checksum."""
    if seed % 8 == 0 or len(data) < HEADER_LEN:
        return data  # one in eight keeps its header as mutated
    n = max(HEADER_LEN, len(data) & ~7)
    b = bytearray(data[:n])
    b[0:8] = MAGIC
    struct.pack_into("<II", b, 8, 1, 0x01020304)
    flags = struct.unpack_from("<I", b, 40)[0] & 3
    struct.pack_into("<I", b, 40, 3 if flags == 2 else flags)
    b[44:64] = bytes(20)
    struct.pack_into("<Q", b, 16, n)
    if seed % 8 != 1:  # one in eight keeps a stale checksum
        struct.pack_into("<Q", b, 32, _checksum(b))
    return bytes(b)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    import atheris

    return fix_header(atheris.Mutate(data, max_size), seed)


# ---------------------------------------------------------------------------
# Walk
# ---------------------------------------------------------------------------


def _json_error(e: ValueError) -> bool:
    return "JSON" in str(e) and not isinstance(e, bale.FormatError)


def _int_digits_error(e: ValueError) -> bool:
    """The interpreter's limit on converting an int to decimal digits."""
    return "integer string conversion" in str(e) and not isinstance(e, bale.FormatError)


class Walk:
    def __init__(self, verified: bool):
        self.verified = verified
        self.allowed = (bale.ThawError,) if verified else (bale.FormatError, bale.ThawError, *TOLERATED)

    def g(self, fn, *args, also=()):
        """fn(*args); an allowed exception gives _MISSING."""
        try:
            return fn(*args)
        except RecursionError:
            return _MISSING
        except self.allowed:
            return _MISSING
        except also:
            return _MISSING
        except ValueError as e:
            if _int_digits_error(e):
                return _MISSING
            raise

    def region(self, region) -> None:
        g = self.g
        root = g(lambda: region.root)
        if root is _MISSING:
            return
        g(bale._bale.region_stats, region)
        g(region.types)
        thawed = g(bale.thaw, root)
        g(repr, root)
        try:
            g(bale.to_json, root)
        except ValueError as e:
            if not _json_error(e):
                raise
        if thawed is not _MISSING:
            self.eq(root, thawed)
            self.eq(thawed, root)
        self.eq(root, root)
        self.walk(root)

    def eq(self, a, b) -> None:
        try:
            self.g(lambda: a == b, also=COMPARE_ERRORS)
        except ValueError as e:
            # numpy arrays inside containers: Python's == raises this on the
            # native values too.
            # (The message differs for an empty array: "truth value of an empty array".)
            if not ("truth value of an" in str(e) and "array" in str(e)):
                raise

    def hash_of(self, v) -> None:
        # Hashable kinds of view; TypeError is what a native value holding an
        # unhashable one raises too.
        self.g(hash, v, also=(TypeError,))

    def lookup(self, container, key) -> None:
        """``key`` came from ``container``'s own iteration: it must be found."""
        try:
            found = key in container
        except (TypeError, RecursionError, *COMPARE_ERRORS, *self.allowed):
            return
        if not found and _self_equal(key) and self.verified:
            raise Finding(f"{type(container).__name__}: {key!r} listed by iteration but `in` says absent")

    def walk(self, root) -> None:
        g = self.g
        stack = [root]
        visited = 0
        while stack and visited < NODE_BUDGET:
            v = stack.pop()
            visited += 1
            if isinstance(v, (bale.ListView, bale.TupleView, bale.NumberListView)):
                n = g(len, v)
                items = g(lambda: list(v)[:ITEMS])
                g(lambda: list(reversed(v))[:ITEMS])
                if isinstance(n, int):
                    for i in (0, 1, n - 1, -1, -n, n, -n - 1):
                        g(v.__getitem__, i, also=(IndexError,))
                g(v.__getitem__, slice(1, 5))
                g(v.__getitem__, slice(None, None, -3))
                if isinstance(v, bale.TupleView):
                    self.hash_of(v)
                if isinstance(v, bale.NumberListView):
                    g(v.tolist)
                    g(lambda: memoryview(v).tolist())
                else:
                    g(bale.column, v, "a", also=(TypeError, KeyError))
                if isinstance(items, list):
                    if items and self.verified:
                        g(v.index, items[0], also=(ValueError, *COMPARE_ERRORS))  # NaN is not found by index
                    stack.extend(items)
            elif isinstance(v, bale.DictView):
                g(len, v)
                keys = g(lambda: list(v)[:ITEMS])
                g(lambda: list(v.values())[:ITEMS])
                # `in` compares with ==, which a stored numpy array answers with an array (ValueError),
                # or refuses when the array is structured or void (TypeError), as in a native dict.
                g(lambda: len(v.values()) == len(v) and 0 in v.values(), also=(ValueError, TypeError, *COMPARE_ERRORS))
                g(lambda: list(v.items())[:ITEMS])
                g(v.get, "a")
                if isinstance(keys, list):
                    for k in keys:
                        self.lookup(v, k)
                        try:
                            val = g(v.__getitem__, k, also=(TypeError,))
                        except KeyError:
                            if self.verified and _self_equal(k):
                                raise Finding(f"DictView: key {k!r} listed by iteration raises KeyError") from None
                            val = _MISSING
                        stack.append(k)
                        if val is not _MISSING:
                            stack.append(val)
            elif isinstance(v, (bale.SetView, bale.FrozenSetView)):
                g(len, v)
                elems = g(lambda: list(v)[:ITEMS])
                if isinstance(v, bale.FrozenSetView):
                    self.hash_of(v)
                if isinstance(elems, list):
                    for e in elems:
                        self.lookup(v, e)
                    g(v.isdisjoint, elems, also=(TypeError,))
                    stack.extend(elems)
            elif isinstance(v, bale.RecordView):
                fields = g(lambda: v._fields)
                g(lambda: v.__bale_type__)
                g(repr, v)
                self.hash_of(v)
                if isinstance(fields, tuple):
                    for f in fields[:ITEMS]:
                        child = g(getattr, v, f, also=() if self.verified else (AttributeError,))
                        if child is not _MISSING:
                            stack.append(child)
                g(len, v, also=(TypeError,))  # only NamedTuple records are sequences
            else:
                g(repr, v)
                if not isinstance(v, (list, dict, set, bytearray)) and getattr(type(v), "__hash__", None):
                    g(hash, v, also=(TypeError,))


def _self_equal(x) -> bool:
    try:
        return bool(x == x)
    except Exception:  # noqa: BLE001 - a view whose bytes are damaged
        return False


bale = None


def _import_bale():
    """Imports bale once libFuzzer runs (atheris loads it at ``Fuzz``).

    A bale built with SanitizerCoverage calls libFuzzer's coverage hooks;
    atheris loads its libFuzzer with local symbols, so they are made global
    first, then bale is imported (its Python code instrumented by atheris).
    """
    global bale
    atheris = sys.modules.get("atheris")
    if atheris is None:  # replaying inputs without the fuzzer (tests)
        import bale as module

        bale = module
        return
    if os.environ.get("BALE_FUZZ_SITE"):
        import ctypes

        core = sys.modules.get("atheris.core_with_libfuzzer")
        if core is not None:
            ctypes.CDLL(core.__file__, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
    with atheris.instrument_imports(include=["bale"]):
        import bale as module
    bale = module


_last_input_fd = None


def one_input(data: bytes) -> None:
    if bale is None:
        _import_bale()
    if _last_input_fd is not None:
        # Kept for the supervisor: a stack overflow kills the process before
        # libFuzzer can write the input that caused it.
        os.ftruncate(_last_input_fd, 0)
        os.pwrite(_last_input_fd, data, 0)
    try:
        region = bale.load(data)
    except (bale.FormatError, bale.ThawError):
        region = None
    if region is not None:
        Walk(verified=False).region(region)
    try:
        checked = bale.load(data, verify=True)
    except bale.FormatError:
        return
    Walk(verified=True).region(checked)


def _artifact_prefix(argv) -> str:
    for a in argv:
        if a.startswith("-artifact_prefix="):
            return a.split("=", 1)[1]
    return "./"


def _max_total_time(argv):
    for a in argv:
        if a.startswith("-max_total_time="):
            return int(a.split("=", 1)[1])
    return None


MAX_RESTARTS = 50


def _is_finding(name: str) -> bool:
    """Whether a file libFuzzer (or `supervise`) saved is a finding, by the prefix of its name."""
    return name.split("-")[0] in ("crash", "timeout", "oom", "leak", "slow")


def supervise() -> int:
    """Runs the fuzzer in a child process and keeps the time box.

    If a signal kills the child, the input it was running is saved as
    ``<artifact_prefix>crash-<sha1>`` (as libFuzzer saves the others). With
    ``-max_total_time``, a child stopped by a finding is followed by a new one
    for the rest of the time (the corpus it grew is kept), so that one known
    finding does not end the run; the exit status is 1 if anything was found.
    """
    import hashlib
    import signal
    import subprocess
    import time

    argv = sys.argv[1:]
    prefix = _artifact_prefix(argv)
    last = prefix + "last-input"
    env = dict(os.environ, BALE_FUZZ_LAST_INPUT=last)
    budget = _max_total_time(argv)
    deadline = time.monotonic() + (budget or 0)
    findings = 0
    while True:
        args = argv
        if budget is not None:
            left = int(deadline - time.monotonic())
            args = [a for a in argv if not a.startswith("-max_total_time=")] + [f"-max_total_time={max(left, 1)}"]
        before = set(os.listdir(prefix or "."))
        rc = subprocess.call([sys.executable, os.path.abspath(__file__), *args], env=env)
        if rc < 0 and os.path.exists(last):
            with open(last, "rb") as f:
                data = f.read()
            crash = f"{prefix}crash-{hashlib.sha1(data).hexdigest()}"
            with open(crash, "wb") as f:
                f.write(data)
            print(f"fuzz_binding: killed by {signal.Signals(-rc).name}; input saved to {crash}", file=sys.stderr)
        new = {n for n in set(os.listdir(prefix or ".")) - before if _is_finding(n)}
        if rc == 0:
            break
        if not new:
            return rc  # not a finding (bad arguments, say): stop here
        findings += len(new)
        if budget is None or deadline - time.monotonic() < 5 or findings >= MAX_RESTARTS:
            break
        print(f"fuzz_binding: {findings} finding(s) so far; fuzzing on for {int(deadline - time.monotonic())} s", file=sys.stderr)
    if findings:
        report_findings(prefix, env)
        print(f"fuzz_binding: {findings} finding(s) saved under {prefix or './'}", file=sys.stderr)
        return 1
    return 0


def report_findings(prefix: str, env: dict) -> None:
    """Replays each saved finding once and prints what it raised.

    libFuzzer prints the exception long before the end of a time-boxed run
    (its dictionary and statistics follow), so a log kept only by its tail
    would name no finding; this puts each one's error last, and its input
    (zlib, then base64) on one line, to be replayed from the log alone.
    """
    import base64
    import subprocess
    import zlib

    folder = prefix or "."
    for name in sorted(os.listdir(folder)):
        if not _is_finding(name):
            continue
        path = os.path.join(folder, name)
        replay = dict(env, BALE_FUZZ_LAST_INPUT=path + ".replay")
        try:
            done = subprocess.run(
                # (Anything the replay saves goes beside the finding, named apart.)
                [sys.executable, os.path.abspath(__file__), "-runs=1", f"-artifact_prefix={folder}/replay-", path],
                env=replay,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,  # atheris prints the exception to stdout
                text=True,
                errors="replace",
                timeout=120,
            )
            lines = done.stdout.splitlines()
            start = next((i for i, line in enumerate(lines) if "Uncaught Python exception" in line), None)
            if done.returncode == 0:
                shown, status = [], "no error this time"
            else:
                shown = lines[start:][:30] if start is not None else lines[-15:]
                status = f"exit status {done.returncode}"
        except subprocess.TimeoutExpired:
            shown, status = [], "still running after 120 s"
        finally:
            if os.path.exists(path + ".replay"):
                os.remove(path + ".replay")
        with open(path, "rb") as f:
            data = f.read()
        print(f"fuzz_binding: finding {path} ({len(data)} bytes), replayed: {status}", file=sys.stderr)
        for line in shown:
            print(f"    {line}", file=sys.stderr)
        packed = base64.b64encode(zlib.compress(data, 9)).decode()
        print(f"fuzz_binding: its input, zlib then base64: {packed}", file=sys.stderr)


def main() -> None:
    import atheris

    global _last_input_fd
    path = os.environ.get("BALE_FUZZ_LAST_INPUT")
    if path:
        _last_input_fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    atheris.Setup(sys.argv, one_input, custom_mutator=custom_mutator)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    atheris.Fuzz()


if __name__ == "__main__":
    if os.environ.get("BALE_FUZZ_LAST_INPUT"):
        main()
    else:
        sys.exit(supervise())
