# plain-attrs decision is cached per compaction: a get= callback that turns a plain field into a property makes later reads run Python code unpinned and unchecked -> SIGSEGV (the walk reads the cleared list with its old length)
import bale
outer = []
class C:
    def __init__(self, x): self.x = x
bale.register(C, ["x"])
class G: pass
def evil(self):
    outer.clear()
    return 1
def get(o):
    C.x = property(evil)
    return (1,)
bale.register(G, ["y"], get=get)
outer.extend([C(1), G(), C(2)] + [[i, str(i) * 20] for i in range(100)])
print(bale.compact(outer).root)
