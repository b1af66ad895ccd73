"""keys() and items() of a DictView (values() is ``DictValues``, in Rust).

They are the standard ``collections.abc`` views (set operations, ``in``,
``len``), except that items are read by position instead of by looking
every key up again: faster, and every entry of a readable dict is reached
even in unverified bytes whose keys no longer hash to their place.
"""

from collections.abc import ItemsView, KeysView


class DictKeys(KeysView):
    __slots__ = ()

    def __repr__(self):
        return f"dict_keys({list(self)!r})"


class DictItems(ItemsView):
    __slots__ = ()

    def __iter__(self):
        return self._mapping._iter_items()

    def __repr__(self):
        return f"dict_items({list(self)!r})"
