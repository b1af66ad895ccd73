# two threads compacting at once: run() pauses the cyclic GC and re-enables it only if it was enabled, so the compaction that ends first turns the GC back on under the other one; that one's walk then runs finalizers outside Compactor::python (here cyclic garbage whose __del__ clears the list being walked) and reads freed memory -> SIGSEGV
import bale, threading, time, gc, sys
D = int(sys.argv[1]) if len(sys.argv) > 1 else 2
class Slow: pass
bale.register(Slow, ["v"], get=lambda o: (time.sleep(0.3), 1)[1:])
L = []
keep = []
class Fin:
    def __del__(self):
        L.clear()
class G: pass
def get(o):
    time.sleep(0.6)                 # meanwhile the other compaction ends and re-enables the GC
    a = Fin(); a.me = a; del a      # ordinary cyclic garbage with a finalizer
    while gc.get_count()[0] < gc.get_threshold()[0] - D:
        keep.append([])             # ordinary allocations: the young generation nears its threshold
    return (1,)
bale.register(G, ["y"], get=get)
t = threading.Thread(target=lambda: bale.compact([Slow()]))
t.start()
time.sleep(0.1)                     # the other compaction has paused the GC by now
L.extend([G()] + [[{frozenset({frozenset({frozenset({i})})}), -i}, [i] * 3] for i in range(3000)])
r = bale.compact(L)
t.join()
print("no crash", len(r.root))
