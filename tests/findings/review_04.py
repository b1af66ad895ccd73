# share=True: a dict's keys are stored (shape_of) before its frame exists, so Python code run for a key (here UUID.bytes) can free the dict itself; a new dict at the same address then gets the freed dict's memo slot: silently wrong data
import bale, uuid
L = []
keep = []
orig = uuid.UUID.bytes
u = uuid.UUID(int=12345)
def evil(self):
    uuid.UUID.bytes = orig
    L[0] = None                 # frees the dict being entered
    n = {"n": "the new dict"}  # likely reuses its address (dict free list)
    keep.append(n)
    L[1] = n
    return orig.fget(self)
uuid.UUID.bytes = property(evil)
L.extend([{u: "value of the dict with the UUID key"}, None])
r = bale.compact(L, share=True)
print(bale.thaw(r.root))
assert bale.thaw(r.root)[1] == {"n": "the new dict"}, bale.thaw(r.root)
