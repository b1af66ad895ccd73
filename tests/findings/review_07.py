# a set grown by Python code that compaction runs (here a patched UUID.bytes of one element) raises RuntimeError("Set changed size during iteration"), not the CompactError naming the place that lists and dicts get
import bale, uuid
orig = uuid.UUID.bytes
S = set()
def evil(self):
    uuid.UUID.bytes = orig
    S.add("added during compaction")
    return orig.fget(self)
uuid.UUID.bytes = property(evil)
S.update({uuid.UUID(int=7), "x" * 20, 1, 2, 3})
try:
    bale.compact([S])
except bale.CompactError as e:
    print("CompactError", e)
except RuntimeError as e:
    raise SystemExit(f"RuntimeError instead of CompactError: {e}")
