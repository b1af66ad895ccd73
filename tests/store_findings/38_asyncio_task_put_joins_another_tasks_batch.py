"""The Store's mutex is a re-entrant lock and an open batch is per Store,
not per task: under asyncio (or gevent/greenlets), all tasks run on one
thread, so a task that awaits inside `with s.batch():` lets another task's
plain put() *join that batch* -- the put returns at once, not durable,
although "s[k] = v ... durable when it returns". When the batch then fails,
the other task's acknowledged put is rolled back: lost.
Expected: a put from outside the batch either waits for it or raises (e.g.
remember the batch's owner: thread *and* task/greenlet, or make nested use
explicit).
Exits 0 when the other task's acknowledged put survives (or the put is
refused with RuntimeError, so that nothing was acknowledged)."""
import asyncio, os, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)

async def batch_task():
    try:
        with s.batch():
            s.put("b1", 1)
            await asyncio.sleep(0.1)          # e.g. awaiting a network call
            raise ConnectionError("upstream failed")
    except ConnectionError:
        pass

refused = []


async def other_task():
    await asyncio.sleep(0.01)
    try:
        s["acknowledged"] = "must survive"    # returns: durable, the user is told
    except RuntimeError as e:                 # or refuses: nothing acknowledged
        print("refused:", e)
        refused.append(e)
    return True

async def main():
    await asyncio.gather(batch_task(), other_task())

asyncio.run(main())
s.close()
r = bale.Store(d, readonly=True)
got = r.get("acknowledged")
print("other task's acknowledged put after the batch failed:", got)
sys.exit(0 if got == "must survive" or (refused and got is None) else 1)
