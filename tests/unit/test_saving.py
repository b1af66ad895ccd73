"""Files made by Region.save and bale.Writer: complete or absent, never a
temporary left behind (real processes killed with SIGKILL), and OSErrors
that carry errno and the file name.

Each test runs twice: with Linux's unnamed temporary files (O_TMPFILE) and
with the named temporary files used where those are not supported
(BALE_NO_O_TMPFILE=1 selects that path)."""

import errno
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import bale
from conftest import mounted_tmpfs

MODES = ["unnamed", "named"]


@pytest.fixture(params=MODES)
def mode(request, monkeypatch):
    if request.param == "named":
        monkeypatch.setenv("BALE_NO_O_TMPFILE", "1")
    else:
        monkeypatch.delenv("BALE_NO_O_TMPFILE", raising=False)
    return request.param


def child(script):
    """A Python process running ``script`` that says "ready" on stdout."""
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line == "ready\n", (line, p.wait())
    return p


def kill(p):
    p.send_signal(signal.SIGKILL)
    assert p.wait(60) == -signal.SIGKILL
    p.stdout.close()
    p.stdin.close()


def test_save_killed_at_random_points_leaves_the_old_file_and_no_temporaries(tmp_path, mode):
    target = tmp_path / "data.bale"
    bale.compact(["old"]).save(target)
    for trial in range(8):
        p = child(
            f"""
            import sys, bale
            region = bale.compact(["new", bytes(32 << 20)])
            print("ready", flush=True)
            while True:
                region.save({str(target)!r})
            """
        )
        # Saves run back to back: the kill lands in one of them, at a random point.
        time.sleep(random.uniform(0.0, 0.4))
        kill(p)
        # The target is one complete file, the old or a new one.
        assert bale.open(target, verify=True).root[0] in ("old", "new"), trial
    # The next save to the target removes what the killed ones left.
    bale.compact(["last"]).save(target)
    assert os.listdir(tmp_path) == ["data.bale"]
    assert bale.open(target, verify=True).root == ["last"]


def test_writer_killed_while_writing_leaves_the_old_file_and_no_temporaries(tmp_path, mode):
    target = tmp_path / "stream.bale"
    bale.compact(["old"]).save(target)
    for trial in range(3):
        p = child(
            f"""
            import time, bale
            w = bale.Writer({str(target)!r})
            for i in range(5000):
                w.append({{"i": i, "text": "x" * 1000}})
            print("ready", flush=True)
            time.sleep(600)
            """
        )
        kill(p)
        assert bale.open(target, verify=True).root == ["old"]
        left = sorted(os.listdir(tmp_path))
        if mode == "unnamed":
            # An unnamed file dies with its process.
            assert left == ["stream.bale"], trial
        else:
            assert len(left) == 2 and left[0].startswith(f".stream.bale.{p.pid}-") and left[0].endswith(".partial"), left
            # The next writer of that target removes it.
            with bale.Writer(target) as w:
                w.append("old")
            assert os.listdir(tmp_path) == ["stream.bale"]
    with bale.Writer(target) as w:
        w.append("done")
    assert os.listdir(tmp_path) == ["stream.bale"]
    assert bale.open(target, verify=True).root == ["done"]


def test_a_live_writers_temporary_file_is_left_alone(tmp_path, mode):
    # Only temporaries of processes that are gone are removed: another
    # process still writing the same target keeps its file.
    target = tmp_path / "shared.bale"
    p = child(
        f"""
        import sys, bale
        w = bale.Writer({str(target)!r})
        w.append("from the child")
        print("ready", flush=True)
        sys.stdin.readline()
        w.close()
        """
    )
    try:
        before = sorted(os.listdir(tmp_path))
        bale.compact(["from the parent"]).save(target)
        assert bale.open(target).root == ["from the parent"]
        assert sorted(set(before) | {"shared.bale"}) == sorted(os.listdir(tmp_path))
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.wait(60) == 0
    finally:
        if p.poll() is None:
            kill(p)
        p.stdout.close()
        p.stdin.close()
    assert os.listdir(tmp_path) == ["shared.bale"]
    assert bale.open(target, verify=True).root == ["from the child"]


def test_save_errors_carry_errno_and_the_file_name(tmp_path, mode):
    region = bale.compact(list(range(1000)))
    missing = tmp_path / "missing" / "data.bale"
    with pytest.raises(FileNotFoundError) as e:
        region.save(missing)
    assert e.value.errno == errno.ENOENT
    assert e.value.filename == str(missing)
    assert str(missing) in str(e.value)
    directory = tmp_path / "dir"
    directory.mkdir()
    with pytest.raises(IsADirectoryError) as e:
        region.save(directory)
    assert (e.value.errno, e.value.filename) == (errno.EISDIR, str(directory))
    with pytest.raises(IsADirectoryError) as e:
        bale.Writer(directory)
    assert (e.value.errno, e.value.filename) == (errno.EISDIR, str(directory))
    with pytest.raises(FileNotFoundError) as e:
        bale.Writer(missing)
    assert (e.value.errno, e.value.filename) == (errno.ENOENT, str(missing))
    assert os.listdir(tmp_path) == ["dir"]
    assert os.listdir(directory) == []


@pytest.fixture
def tiny_fs():
    """A 1 MiB tmpfs, mounted for the test (needs the right to mount)."""
    with mounted_tmpfs("1m") as where:
        yield where


def test_a_full_file_system_raises_enospc_naming_the_file_and_leaves_nothing(tiny_fs, mode):
    target = os.path.join(tiny_fs, "big.bale")
    region = bale.compact([bytes(3 << 20)])
    with pytest.raises(OSError) as e:
        region.save(target)
    assert (e.value.errno, e.value.filename) == (errno.ENOSPC, target)
    assert os.listdir(tiny_fs) == []
    with pytest.raises(OSError) as e:
        with bale.Writer(target) as w:
            for _ in range(8):
                w.append(bytes(1 << 19))
    assert (e.value.errno, e.value.filename) == (errno.ENOSPC, target)
    assert os.listdir(tiny_fs) == []
    # The space is free again: a small region fits.
    bale.compact([1, 2, 3]).save(target)
    assert os.listdir(tiny_fs) == ["big.bale"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_discarding_its_copy_of_a_writer_leaves_the_parents_file(tmp_path, mode):
    target = tmp_path / "forked.bale"
    w = bale.Writer(target)
    w.append("before the fork")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            w.abort()
            code = 0
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    w.append("after")
    w.close()
    assert bale.open(target, verify=True).root == ["before the fork", "after"]
    assert os.listdir(tmp_path) == ["forked.bale"]
