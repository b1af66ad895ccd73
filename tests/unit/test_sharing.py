"""compact(..., share=True): identity sharing and cycles kept, as pickle keeps them."""

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bale


def roundtrip(obj):
    """Thawed from the region, from its bytes (verified) and from a pickle of it."""
    r = bale.compact(obj, share=True)
    again = bale.load(bytes(r), verify=True)
    unpickled = pickle.loads(pickle.dumps(r, protocol=5))
    return [bale.thaw(r.root), bale.thaw(again.root), bale.thaw(unpickled.root)]


def test_shared_objects_come_back_shared():
    leaf = [1, 2, 3]
    d = {"leaf": leaf}
    t = (leaf, "s")
    s = frozenset({1, 2})
    empty = []
    obj = [leaf, leaf, d, d, t, t, s, s, empty, empty, {"again": leaf}]
    for back in roundtrip(obj):
        assert back == obj
        assert back[0] is back[1]
        assert back[2] is back[3] and back[2]["leaf"] is back[0]
        assert back[4] is back[5] and back[4][0] is back[0]
        assert back[6] is back[7]
        assert back[8] is back[9] and back[8] == []
        assert back[10]["again"] is back[0]
        back[8].append("mutation shows through both references")
        assert back[9] == ["mutation shows through both references"]


def test_a_list_containing_itself():
    loop = [1]
    loop.append(loop)
    for back in roundtrip(loop):
        assert back[0] == 1
        assert back[1] is back
        assert repr(back) == "[1, [...]]"
    r = bale.compact(loop, share=True)
    view = r.root
    assert repr(view) == "[1, [...]]"
    assert len(view) == 2
    # Views can be walked around the cycle as long as one likes.
    node = view
    for _ in range(1000):
        node = node[1]
    assert node[0] == 1
    assert view == view


def test_a_dict_containing_itself_and_mutual_cycles():
    d = {"name": "d"}
    d["self"] = d
    a, b = {"name": "a"}, {"name": "b"}
    a["other"], b["other"] = b, a
    obj = {"d": d, "pair": [a, b]}
    for back in roundtrip(obj):
        assert back["d"]["self"] is back["d"]
        a2, b2 = back["pair"]
        assert a2["other"] is b2 and b2["other"] is a2
        assert a2["name"] == "a"
    view = bale.compact(obj, share=True).root
    assert view["pair"][0]["other"]["other"]["other"]["name"] == "b"
    assert repr(view["d"]) == "{'name': 'd', 'self': {...}}"


def test_a_cycle_through_a_tuple():
    t = ([], "tuple")
    t[0].append(t)
    for back in roundtrip(t):
        assert back[0][0] is back
        assert back[1] == "tuple"
    outer = [t, t[0]]
    for back in roundtrip(outer):
        assert back[0][0] is back[1]
        assert back[1][0] is back[0]


def test_cyclic_regions_verify_and_say_so():
    loop = []
    loop.append(loop)
    r = bale.compact({"loop": loop}, share=True)
    r.verify()
    head = bytes(r)[40:44]
    assert int.from_bytes(head, "little") == 3  # SHARED | CYCLIC
    plain = bale.compact({"x": [1]}, share=True)
    assert int.from_bytes(bytes(plain)[40:44], "little") == 1  # SHARED only


def test_equality_of_cyclic_views_is_pythons():
    loop = []
    loop.append(loop)
    view = bale.compact(loop, share=True).root
    other = bale.compact(loop, share=True).root
    # Python itself cannot compare two distinct self-containing lists.
    with pytest.raises(RecursionError):
        _ = loop == bale.thaw(other)
    with pytest.raises(RecursionError):
        _ = view == other
    assert view != [1]
    assert not (view == [])


def test_without_share_cycles_are_refused_and_sharing_is_not_kept():
    loop = []
    loop.append(loop)
    with pytest.raises(bale.CompactError, match="cycle"):
        bale.compact(loop)
    x = [1]
    a, b = bale.thaw(bale.compact([x, x]).root)
    assert a == b and a is not b


def test_share_errors_name_the_path():
    class Custom:
        pass

    loop = [1]
    loop.append({"bad": Custom(), "loop": loop})
    with pytest.raises(bale.CompactError, match=r"root\[1\]\['bad'\]: cannot compact Custom"):
        bale.compact(loop, share=True)


def test_strings_and_scalars_under_share():
    s = "a string long enough to be stored as an object, once"
    obj = [s, s, 2**80, 1.5, b"bytes", None, True, {s: s}]
    for back in roundtrip(obj):
        assert back == obj
    r1 = bale.compact(obj, share=True)
    r2 = bale.compact(obj)
    assert r1.nbytes <= r2.nbytes


# ---------------------------------------------------------------------------
# Random graphs: identity structure is kept exactly
# ---------------------------------------------------------------------------


@st.composite
def graphs(draw):
    """A random object graph of lists, dicts and tuples with sharing and cycles.

    Lists and dicts get references to any node (cycles included); tuples,
    being immutable, are built from leaves and lists first, then referenced."""
    n = draw(st.integers(1, 12))
    kinds = draw(st.lists(st.sampled_from(["list", "dict", "tuple"]), min_size=n, max_size=n))
    leaves = st.one_of(st.integers(-50, 50), st.text(max_size=12), st.none())
    nodes = [{} if k == "dict" else [] for k in kinds]
    lists = [j for j in range(n) if kinds[j] == "list"]
    for i, k in enumerate(kinds):
        if k == "tuple":
            refs = st.sampled_from(lists).map(lambda j: ("node", j)) if lists else leaves
            parts = draw(st.lists(st.one_of(leaves, refs), max_size=4))
            nodes[i] = tuple(nodes[p[1]] if isinstance(p, tuple) else p for p in parts)
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.one_of(st.integers(0, n - 1).map(lambda j: ("node", j)), leaves)), max_size=3 * n))
    for src, dst in edges:
        container = nodes[src]
        target = nodes[dst[1]] if isinstance(dst, tuple) and dst and dst[0] == "node" else dst
        if isinstance(container, dict):
            container[f"k{len(container)}"] = target
        elif isinstance(container, list):
            container.append(target)
    return nodes


def shape_of(root):
    """The graph's structure with identities numbered in first-visit order."""
    ids = {}
    out = []
    stack = [root]
    while stack:
        x = stack.pop()
        # An empty tuple is a leaf: whether two are one object is CPython's
        # choice (3.10's tuple() of an empty generator makes a new one,
        # while thaw, like every () literal, gives the shared empty tuple).
        if isinstance(x, (list, dict, tuple)) and not (type(x) is tuple and not x):
            if id(x) in ids:
                out.append(("ref", ids[id(x)]))
                continue
            ids[id(x)] = len(ids)
            items = list(x.items()) if isinstance(x, dict) else list(enumerate(x))
            out.append((type(x).__name__, len(items), [k for k, _ in items]))
            stack.extend(v for _, v in reversed(items))
        else:
            out.append(("leaf", x))
    return out


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_random_graphs_keep_their_identity_structure(built):
    for back in roundtrip(built):
        assert shape_of(back) == shape_of(built)


def test_shared_int_pairs_inside_small_tuples_stay_shared():
    # Without share=True a tuple of int pairs is written at once, pairs in
    # their slots; with it, a pair reached twice is still one object.
    p = (1, 2)
    value = ((p, p), (p, (3, 4)))
    t = bale.thaw(bale.compact(value, share=True).root)
    assert t == value and t[0][0] is t[0][1] is t[1][0]
    plain = bale.compact(value)
    assert bale.thaw(plain.root) == value and plain.root == value
    assert bale.load(bytes(plain), verify=True).root[1][1] == (3, 4)
