# a property read during compaction re-enables the cyclic GC (gc.enable + threshold 1); the next GC-tracked allocation in the compactor (a set iterator) runs a finalizer outside Compactor::python, which clears the list being walked -> SIGSEGV
import bale, gc
outer = []
class Fin:
    def __del__(self):
        outer.clear()
class P:
    @property
    def y(self):
        a = Fin(); a.self = a   # cyclic garbage with a finalizer
        del a
        gc.enable(); gc.set_threshold(1)
        return 1
bale.register(P, ["y"])
outer.extend([P(), {1, 2, 3}] + [[i, str(i) * 20] for i in range(100)])
r = bale.compact(outer); print(len(r.root), bale.load(bytes(r), verify=True) is not None)
