# valid, verified data: `deep_tuple_view in set_view` (or `in dict_view`, `dict_view[deep_tuple_view]`) raises TypeError("unhashable type: 'TupleView'") where native Python answers False (the README allows RecursionError): views.rs find_by_index maps every error of key.hash() (RecursionError, FormatError) to TypeError
import bale
x = 0
for _ in range(5000):
    x = (x,)
r = bale.load(bytes(bale.compact([x, frozenset({1, 2, 3}), {"a": 1, "b": 2}])), verify=True)
probe, s, d = r.root[0], r.root[1], r.root[2]
print("native: x in {1, 2, 3} ->", x in {1, 2, 3}, "(README allows RecursionError for views of deep data, not TypeError)")
bad = 0
for name, op in (("in set view", lambda: probe in s), ("in dict view", lambda: probe in d), ("dict view [ ]", lambda: d[probe])):
    try:
        op()
    except (RecursionError, KeyError) as e:
        print(name, "->", type(e).__name__)
    except TypeError as e:
        print(name, "-> TypeError:", e); bad += 1
raise SystemExit(1 if bad else 0)
