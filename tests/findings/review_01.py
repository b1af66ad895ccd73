# plain-attribute record: instance __dict__ holds a non-str key whose hash equals hash('x'); dict lookup of 'x' calls its __eq__ (Python code) outside Compactor::python -> SIGSEGV (the walk reads the cleared list with its old length)
import bale
outer = []
class K:
    def __hash__(self): return hash('x')
    def __eq__(self, other):
        outer.clear()
        return False
class C:
    pass
bale.register(C, ["x"])
c = C()
c.__dict__[K()] = 0   # occupies the first probe slot for hash('x')
c.__dict__['x'] = 1
outer.extend([c] + [[i, str(i) * 20] for i in range(100)])
print(bale.compact(outer).root)
