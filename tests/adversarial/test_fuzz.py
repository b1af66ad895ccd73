"""Fuzzing: malformed bytes give FormatError, never a crash, a hang or another exception.

The cases run in a child process (tests/_fuzz_child.py) so that a segfault or
an abort fails the test instead of killing pytest; the child limits its
address space so unbounded allocation fails too, and an alarm kills it if one
case hangs. A failure names the case seed; reproduce one case with

    python tests/_fuzz_child.py one CASE_SEED 0 /tmp/status MODE
"""

import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest

import bale
from _bale_testlib import HAVE_XXHASH, Writer, fix_checksum, put_u32, slot_int, slot_tuple

CHILD = pathlib.Path(__file__).resolve().parents[1] / "_fuzz_child.py"
TIMEOUT = 300  # seconds for one child run; far above its normal run time


def _describe_exit(rc):
    if rc < 0:
        try:
            return f"killed by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def run_child(mode, seed, count):
    with tempfile.TemporaryDirectory() as d:
        status = os.path.join(d, "status")
        cmd = [sys.executable, str(CHILD), mode, str(seed), str(count), status]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired as e:
            last = pathlib.Path(status).read_text().strip() if os.path.exists(status) else "?"
            pytest.fail(f"fuzz child {mode} seed={seed} hung for {TIMEOUT} s; last case: {last}\n{e.stdout or ''}")
        last = pathlib.Path(status).read_text().strip() if os.path.exists(status) else "?"
    if proc.returncode != 0:
        detail = proc.stdout[-20000:] + "\n--- stderr ---\n" + proc.stderr[-5000:]
        pytest.fail(
            f"fuzz child {mode} seed={seed} count={count}: {_describe_exit(proc.returncode)}; "
            f"last case started: {last}\n"
            f"(reproduce: python {CHILD} one <CASE_SEED> 0 /tmp/status {mode})\n{detail}"
        )
    return proc.stdout


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mutated_regions(seed):
    out = run_child("mutate", seed, 3000)
    assert "cases=3000" in out


def test_fully_random_bytes():
    out = run_child("random", 11, 20000)
    assert "cases=20000" in out


def test_valid_header_followed_by_random_words():
    out = run_child("header-random", 12, 20000)
    assert "cases=20000" in out


# ---------------------------------------------------------------------------
# Crafted hostile regions, also in a child (a hang or crash must fail, not block)
# ---------------------------------------------------------------------------


def _run_snippet(code, timeout=120):
    script = "import sys; sys.path.insert(0, %r)\n" % str(CHILD.parent) + textwrap.dedent(code)
    try:
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {timeout} s")
    assert proc.returncode == 0, f"{_describe_exit(proc.returncode)}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _doubling_dag(levels, flags=0):
    """TUPLE payloads where level k holds two TUPLE slots to level k-1: 2**levels leaves."""
    w = Writer()
    prev = w.words(slot_int(1), slot_int(2))
    for _ in range(levels):
        prev = w.words(slot_tuple(2, prev), slot_tuple(2, prev))
    return w.finish(slot_tuple(2, prev), flags=flags)


def test_doubling_dag_without_shared_flag_is_refused_not_expanded():
    # A container referenced twice without the SHARED flag is malformed; a
    # reader expanding it must stop (FormatError) instead of building 2**64 leaves.
    buf = _doubling_dag(64)
    out = _run_snippet(
        f"""
        import bale
        buf = {buf!r}
        for op in ("thaw", "repr", "eq", "verify"):
            try:
                if op == "verify":
                    bale.load(buf, verify=True)
                else:
                    root = bale.load(buf).root
                    if op == "thaw":
                        bale.thaw(root)
                    elif op == "repr":
                        repr(root)
                    else:
                        root == root[0]
            except bale.FormatError:
                print(op, "FormatError")
            else:
                print(op, "no error")
        """
    )
    assert "thaw FormatError" in out
    assert "repr FormatError" in out
    assert "verify FormatError" in out


def test_doubling_dag_with_shared_flag_does_not_hang():
    # With SHARED, repeated references are allowed; thaw and verify must still
    # finish (sharing preserved, or FormatError), never expand 2**64 leaves.
    buf = _doubling_dag(64, flags=1)
    out = _run_snippet(
        f"""
        import bale
        buf = {buf!r}
        for op in ("verify", "thaw"):
            try:
                if op == "verify":
                    bale.load(buf, verify=True)
                else:
                    bale.thaw(bale.load(buf).root)
            except bale.FormatError as e:
                print(op, "FormatError")
            else:
                print(op, "ok")
        """
    )
    assert "verify" in out and "thaw" in out


@pytest.mark.skipif(not HAVE_XXHASH, reason="xxhash is not installed: cannot forge a valid checksum")
@pytest.mark.parametrize(
    "value",
    [
        [{"x": i, "y": [i] * (i % 4), "z": {"k": (i, str(i))}} for i in range(200)],
        {"a": [1, "hello world"], "b": None},
        [{"id": i} for i in range(100)],
    ],
    ids=["records", "small", "same-shape"],
)
def test_valid_region_with_shared_flag_reads_fully(value):
    # The SHARED flag only permits sharing; a region without any sharing is
    # still valid with it set, and must read, thaw and repr like before.
    b = bytearray(bale.compact(value))
    put_u32(b, 40, 1)
    fix_checksum(b)
    region = bale.load(bytes(b), verify=True)
    assert bale.thaw(region.root) == value
    assert repr(region.root) == repr(value)
    assert region.root == value
