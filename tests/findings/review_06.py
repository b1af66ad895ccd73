# share=True: finish_frame memoizes a container by address without owning it; a get= callback later frees it and a new list reuses the address: the new list is written as the old one (silently wrong data)
import bale
L = []
keep = {}
class G: pass
def get(o):
    L[0] = None
    del keep["a"]                      # the first list dies (it was never pinned)
    b = ["the", "new", "list", 12345]  # list free list: likely the same address
    keep["b"] = b
    L[2] = b
    return (1,)
bale.register(G, ["y"], get=get, make=lambda y: ("G", y))
a = ["old", "list", "contents", 999999]
keep["a"] = a
L.extend([a, G(), None])
del a
r = bale.compact(L, share=True)
out = bale.thaw(r.root)
print(out)
assert out[2] == ["the", "new", "list", 12345], out
