"""Lifetime of shared-memory segments: who owns them, what each kind of exit does.

The process that calls `bale.share` owns the segment; its name disappears
from /dev/shm when it is unlinked (from any process) or when the owner ends,
however it ends (a normal exit, an exception, `os._exit`, SIGTERM, SIGKILL),
with no resource-tracker warning; processes that attach, and children the
owner forks, never remove it; regions attached before stay valid. The
processes here are real and really killed. The waits poll for an outcome
with a generous deadline: nothing is asserted about time.
"""

import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

import bale

pytestmark = pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm")

RECORDS = [{"id": i, "name": f"n{i}"} for i in range(500)]


def _exists(name: str) -> bool:
    return os.path.exists(os.path.join("/dev/shm", name))


def _gone_soon(name: str, deadline: float = 30.0) -> bool:
    """Whether the segment's name disappears before ``deadline`` seconds pass."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if not _exists(name):
            return True
        time.sleep(0.02)
    return False


OWNER = """
import os, signal, sys, time
import bale
handle = bale.share(bale.compact([{{"id": i, "name": f"n{{i}}"}} for i in range(500)]))
print(handle.name, handle.nbytes, flush=True)
sys.stdin.readline()  # the test attached: now end as told
how = {how!r}
if how == "exit":
    sys.exit(0)
if how == "exception":
    raise RuntimeError("owner fails")
if how == "os._exit":
    os._exit(3)
time.sleep(600)  # killed by the test
"""


@pytest.mark.parametrize("how", ["exit", "exception", "os._exit", "SIGTERM", "SIGKILL"])
def test_the_segment_goes_with_its_owner_however_the_owner_ends(how):
    owner = subprocess.Popen([sys.executable, "-c", OWNER.format(how=how)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        name, nbytes = owner.stdout.readline().split()
        handle = bale.SharedRegion(name, int(nbytes))
        assert _exists(name)
        attached = handle.attach(verify=True)
        owner.stdin.write("go\n")
        owner.stdin.flush()
        if how in ("SIGTERM", "SIGKILL"):
            owner.send_signal(getattr(signal, how))
        owner.wait(timeout=60)
        stderr = owner.stderr.read()
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        for pipe in (owner.stdin, owner.stdout, owner.stderr):
            pipe.close()
    assert _gone_soon(name), f"{name} stayed in /dev/shm after its owner ended ({how})"
    assert "resource_tracker" not in stderr and "leaked" not in stderr, stderr
    # What was attached before still reads; nothing new can attach.
    assert attached.root[123]["name"] == "n123"
    with pytest.raises(FileNotFoundError):
        handle.attach()


def _share_and_wait(queue):
    handle = bale.share(bale.compact(RECORDS))
    queue.put((handle, os.getpid()))
    time.sleep(600)


def test_a_killed_spawned_child_does_not_leave_its_segment_until_the_parent_exits():
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_share_and_wait, args=(queue,))
    child.start()
    try:
        handle, pid = queue.get(timeout=120)
        assert pid == child.pid and _exists(handle.name)
        region = handle.attach()
        child.kill()
        child.join(60)
    finally:
        if child.is_alive():
            child.kill()
            child.join()
    assert _gone_soon(handle.name)  # this process, the parent, is still running
    assert region.root[499]["id"] == 499


def _attach_and_report(handle, queue):
    region = handle.attach()
    queue.put(region.root[7]["name"])
    time.sleep(600)


def test_processes_that_attach_do_not_own_the_segment():
    handle = bale.share(bale.compact(RECORDS))
    try:
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        consumer = ctx.Process(target=_attach_and_report, args=(handle, queue))
        consumer.start()
        assert queue.get(timeout=120) == "n7"
        consumer.kill()
        consumer.join(60)
        # A consumer's death removes nothing: another process can still attach.
        for _ in range(3):
            time.sleep(0.05)
            assert _exists(handle.name)
        assert handle.attach().root[7]["name"] == "n7"
    finally:
        handle.unlink()
    assert not _exists(handle.name)


def test_forked_children_do_not_own_the_segment():
    handle = bale.share(bale.compact(RECORDS))
    try:
        pid = os.fork()
        if pid == 0:  # the child reads, then ends abruptly
            ok = handle.attach().root[5]["id"] == 5
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        for _ in range(3):
            time.sleep(0.05)
            assert _exists(handle.name)
        # What a forked child runs at a normal exit removes nothing either.
        pid = os.fork()
        if pid == 0:
            try:
                from bale import _shm

                _shm._unlink_owned()  # bale's exit handler, inherited from the parent
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        assert _exists(handle.name)
    finally:
        handle.unlink()


def test_unlink_from_another_process_removes_the_name_and_the_owner_does_not_mind(tmp_path):
    handle = bale.share(bale.compact(RECORDS))
    local = handle.attach()
    code = (
        "import sys, bale\n"
        f"bale.SharedRegion({handle.name!r}, {handle.nbytes}).unlink()\n"
        f"bale.SharedRegion({handle.name!r}, {handle.nbytes}).unlink()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert not _exists(handle.name)
    handle.unlink()  # idempotent in the owner too
    assert local.root[3]["id"] == 3


def test_a_closed_region_is_refused_before_a_segment_is_made():
    before = {n for n in os.listdir("/dev/shm") if n.startswith("bale_")}
    region = bale.compact(RECORDS)
    region.close()
    with pytest.raises(ValueError, match="region is closed"):
        bale.share(region)
    assert {n for n in os.listdir("/dev/shm") if n.startswith("bale_")} == before
