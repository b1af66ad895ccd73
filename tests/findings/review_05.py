# a set element's Python code (UUID.bytes) drops the set from the list being walked; the set dies when elements() drops its iterator, outside Compactor::python, and a weakref callback on an unpinned frozenset element clears the list -> SIGSEGV
import bale, uuid, weakref
L = []
orig = uuid.UUID.bytes
u = uuid.UUID(int=12345)
def evil(self):
    uuid.UUID.bytes = orig
    L[0] = None          # the set now lives only through the compactor's iterator
    return orig.fget(self)
uuid.UUID.bytes = property(evil)
f = frozenset({"a frozenset element"})
wr = weakref.ref(f, lambda _: L.clear())
s = {u, f}
del f
L.extend([s] + [[i, str(i) * 20] for i in range(100)])
del s
print(bale.compact(L).root)
