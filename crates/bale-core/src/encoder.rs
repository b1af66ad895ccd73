//! The walk that writes values into a [`Builder`], whatever they are read
//! from: the one encoder every writer of values goes through.
//!
//! A [`Source`] says what each of its values is: a leaf it writes itself
//! (a scalar, a string, a set, a value copied whole) and whose slot it
//! returns, or a container it opens on the [`Walk`], whose children it then
//! hands over one by one. [`encode`] and the `Walk` own what every writer
//! shares:
//! - the stack of open containers, kept on the heap (a value nested a
//!   million deep takes no native stack), and their children's slots;
//! - the children-first order of FORMAT.md: a container is written once all
//!   its children's slots are known, by the one `Builder` call of its kind
//!   (`Container::write`);
//! - identity: with sharing on, a container (or a leaf the source keeps,
//!   [`Walk::keep`]) met again is written once, and a container met again
//!   inside itself becomes a forward reference (`ForwardRefs`), which makes
//!   the region cyclic.
//!
//! Sources: Python objects (`bale-python`'s `compactor.rs`, which the
//! streaming `Writer` and JSON conversion use too), stored values
//! (`transplant.rs`: region to region, `Region.compacted()`, the store's
//! reclaim) and the golden vectors' model of Python values
//! (`tests/golden.rs`). Which kind a value is, and its layout, stays with
//! the source and the `Builder`: the walk never looks inside a value.
//!
//! Note [What a cursor may hold]
//! The walk moves a source's cursor on every container it opens, so a
//! cursor is a few words with no owned data: a cursor that owned memory
//! (a list column's offsets in a `Box`) made the frame's push an
//! out-of-line call with an unwinding path, and copying a tree of stored
//! tuples a tenth slower. A container that needs more (those offsets) reads
//! it when it closes, in `Source::container`.

use rustc_hash::FxHashMap as HashMap;

use crate::writer::{Builder, ForwardRefs};

/// How a container is written once its children's slots are known.
#[derive(Debug)]
pub enum Container {
    /// A LIST or TUPLE of the children.
    Seq { tuple: bool },
    /// A dict of the `dict_class` word `class` whose keys are the shape at
    /// `shape`; the children are its values.
    Dict { class: u64, shape: u64 },
    /// An ID_DICT whose keys are `ids` of the key table at `table` (see
    /// `id_dict`); the children are its values.
    IdDict { table: u64, ids: crate::id_dict::Ids },
    /// A RECORD of the type at `ty`; the children are its field values.
    Record { ty: u64 },
    /// A TABLE of `rows` rows with the keys of the shape at `shape`; the
    /// children are its columns.
    Table { rows: usize, shape: u64 },
    /// A LIST_COLUMN (a ROWS_COLUMN when `rows`: its child is a TABLE):
    /// one child (the flattened items) cut by `offsets`.
    ListColumn { offsets: Vec<u32>, rows: bool },
    /// A KEYED_TABLE with the keys of the shape at `shape`, its key lists
    /// `lists` and each row's `row_lists` (see `columns::KeyLists`); the
    /// children are its columns.
    KeyedTable { shape: u64, lists: Vec<Vec<u8>>, row_lists: Vec<u8> },
}

impl Container {
    /// Writes the container around `children` and returns its slot.
    #[inline]
    pub fn write(self, dst: &mut Builder, children: &[u64]) -> u64 {
        match self {
            Container::Seq { tuple } => dst.seq(tuple, children),
            Container::Dict { class, shape } => dst.dict_of_class(class, shape, children),
            Container::IdDict { table, ids } => dst.id_dict(table, &ids, children),
            Container::Record { ty } => dst.record(ty, children),
            Container::Table { rows, shape } => dst.table_object(rows, shape, children),
            Container::ListColumn { offsets, rows: false } => dst.list_column(children[0], &offsets),
            Container::ListColumn { offsets, rows: true } => dst.rows_column(children[0], &offsets),
            Container::KeyedTable { shape, lists, row_lists } => {
                let lists: Vec<&[u8]> = lists.iter().map(|l| &l[..]).collect();
                dst.keyed_table_object(shape, children, &lists, &row_lists)
            }
        }
    }
}

/// Values [`encode`] can write: where they are read from, and how.
///
/// `encode` visits the root; `visit` writes a leaf and returns its slot,
/// or opens a container ([`Walk::open`]) and returns `None`. While a
/// container is open, `encode` asks `next_child` for its children one by
/// one and visits each; when there are no more, it writes the container
/// (as `container` says) around its children's slots, remembers it under
/// its identity, and calls `closed`.
pub trait Source {
    /// A value to write (a pointer, an offset, a reference).
    type Node;
    /// Where an open container is among its children.
    type Cursor;
    type Error;

    /// The walk's state and the builder written to.
    fn parts(&mut self) -> (&mut Walk<Self::Cursor>, &mut Builder);

    /// Writes `node` if it is a leaf (its slot), or opens it as a container.
    fn visit(&mut self, node: Self::Node) -> Result<Option<u64>, Self::Error>;

    /// The next child of the top open container, `None` when it has no more.
    fn next_child(&mut self) -> Result<Option<Self::Node>, Self::Error>;

    /// How the container of `cursor` is written (asked when it closes).
    fn container(&self, cursor: &Self::Cursor) -> Result<Container, Self::Error>;

    /// The container of `cursor` was written as `slot`, and remembered
    /// under its identity if `kept`; its frame is gone.
    #[inline]
    fn closed(&mut self, _cursor: Self::Cursor, _slot: u64, _kept: bool) {}
}

/// An open container: where the source is among its children, and where
/// their slots start.
pub struct Frame<C> {
    pub cursor: C,
    /// Where its children's slots start in `Walk::slots`.
    pub base: usize,
    /// The key it is remembered under once written ([`NO_IDENTITY`]: none).
    identity: u64,
}

/// The identity of what is never found again.
pub const NO_IDENTITY: u64 = 0;

/// The state of a walk: the open containers, the slots of their children
/// written so far, and (with sharing) what was written by identity. Keep
/// one across runs that write into one destination, so values met again
/// in a later run are found again too.
pub struct Walk<C> {
    share: bool,
    frames: Vec<Frame<C>>,
    /// The slots of the open containers' children, innermost last.
    pub slots: Vec<u64>,
    /// Identity -> slot of what was written (sharing on).
    written: HashMap<u64, u64>,
    /// Identity -> depth of the containers being written (sharing on).
    active: HashMap<u64, usize>,
    forward: ForwardRefs,
    met_again: bool,
}

impl<C> Walk<C> {
    /// `share`: write each value met again once (cycles allowed).
    pub fn new(share: bool) -> Walk<C> {
        Walk {
            share,
            frames: Vec::new(),
            slots: Vec::new(),
            written: HashMap::default(),
            active: HashMap::default(),
            forward: ForwardRefs::default(),
            met_again: false,
        }
    }

    /// Whether values met again are written once.
    #[inline]
    pub fn shares(&self) -> bool {
        self.share
    }

    /// Whether a value was met again (the destination needs `FLAG_SHARED`).
    pub fn met_again(&self) -> bool {
        self.met_again
    }

    /// Whether forward references were written (the destination needs `FLAG_CYCLIC`).
    pub fn made_cycles(&self) -> bool {
        self.forward.made()
    }

    /// The open containers, outermost first.
    #[inline]
    pub fn frames(&self) -> &[Frame<C>] {
        &self.frames
    }

    /// The open containers, outermost first, to move their cursors.
    #[inline]
    pub fn frames_mut(&mut self) -> &mut [Frame<C>] {
        &mut self.frames
    }

    /// How many containers are open.
    #[inline]
    pub fn depth(&self) -> usize {
        self.frames.len()
    }

    /// The innermost open container's cursor.
    #[inline]
    pub fn top(&mut self) -> Option<&mut C> {
        self.frames.last_mut().map(|f| &mut f.cursor)
    }

    /// The innermost open container's cursor, to read.
    #[inline]
    pub fn top_ref(&self) -> Option<&C> {
        self.frames.last().map(|f| &f.cursor)
    }

    /// Opens a container whose children's slots start at `base` (the
    /// slots already pushed from there on are its first children's), to be
    /// remembered under `identity` (with sharing on).
    #[inline(always)]
    pub fn open_at(&mut self, cursor: C, identity: u64, base: usize) {
        let identity = if self.share { identity } else { NO_IDENTITY };
        if identity != NO_IDENTITY {
            self.note_open(identity);
        }
        self.frames.push(Frame { cursor, base, identity });
    }

    // Out of line: the push above is on every container's path.
    #[inline(never)]
    fn note_open(&mut self, identity: u64) {
        self.active.insert(identity, self.frames.len());
    }

    /// Opens a container, to be remembered under `identity` (with sharing on).
    #[inline(always)]
    pub fn open(&mut self, cursor: C, identity: u64) {
        self.open_at(cursor, identity, self.slots.len())
    }

    /// The slot written for `identity` (with sharing on).
    #[inline]
    pub fn written(&mut self, identity: u64) -> Option<u64> {
        let slot = self.written.get(&identity).copied();
        self.met_again |= slot.is_some();
        slot
    }

    /// The depth of the open container of `identity` (with sharing on).
    #[inline]
    pub fn open_depth(&self, identity: u64) -> Option<usize> {
        self.active.get(&identity).copied()
    }

    /// The slot that stands for the open container at `depth` until it is
    /// written (a forward reference).
    pub fn forward_to(&mut self, depth: usize) -> u64 {
        self.met_again = true;
        self.forward.placeholder(depth)
    }

    /// What `identity` was written as, or a forward reference to it while it
    /// is open: `None` when it was not met before (or sharing is off).
    #[inline]
    pub fn recall(&mut self, identity: u64) -> Option<u64> {
        if !self.share || identity == NO_IDENTITY {
            return None;
        }
        if let Some(slot) = self.written(identity) {
            return Some(slot);
        }
        self.open_depth(identity).map(|depth| self.forward_to(depth))
    }

    /// Remembers a value written whole (a set, a column) under `identity`
    /// (with sharing on).
    #[inline]
    pub fn keep(&mut self, identity: u64, slot: u64) {
        if self.share && identity != NO_IDENTITY {
            self.written.insert(identity, slot);
        }
    }

    fn reset(&mut self) {
        // A run that failed leaves its frames: they are not this run's.
        self.frames.clear();
        self.slots.clear();
        self.active.clear();
    }
}

/// Writes `root` and everything it reaches through `source`; returns its slot.
#[inline]
pub fn encode<S: Source>(source: &mut S, root: S::Node) -> Result<u64, S::Error> {
    source.parts().0.reset();
    if let Some(slot) = source.visit(root)? {
        return Ok(slot);
    }
    while source.parts().0.depth() > 0 {
        match source.next_child()? {
            Some(child) => {
                if let Some(slot) = source.visit(child)? {
                    source.parts().0.slots.push(slot);
                }
            }
            None => close(source)?,
        }
    }
    Ok(source.parts().0.slots.pop().expect("the root leaves one slot"))
}

/// Writes the innermost open container around its children's slots.
#[inline]
fn close<S: Source>(source: &mut S) -> Result<(), S::Error> {
    let frame = source.parts().0.frames.pop().expect("a frame to close");
    let container = source.container(&frame.cursor)?;
    let (walk, dst) = source.parts();
    let depth = walk.frames.len();
    let children = &walk.slots[frame.base..];
    let slot = container.write(dst, children);
    if walk.forward.made() {
        walk.forward.note(dst, slot, children);
        walk.forward.resolve(dst, depth, slot);
    }
    walk.slots.truncate(frame.base);
    let kept = frame.identity != NO_IDENTITY;
    if kept {
        walk.active.remove(&frame.identity);
        walk.written.insert(frame.identity, slot);
    }
    walk.slots.push(slot);
    source.closed(frame.cursor, slot, kept);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::FormatError;
    use crate::reader::{Region, Value};
    use crate::Result;

    /// A tiny source: lists of small ints, by index into an arena, so a
    /// node can be reached twice or from inside itself.
    enum Tree {
        Leaf(i64),
        Node(Vec<usize>),
    }

    struct Arena<'a> {
        nodes: &'a [Tree],
        walk: Walk<(usize, usize)>,
        dst: Builder,
    }

    impl Source for Arena<'_> {
        type Node = usize;
        type Cursor = (usize, usize);
        type Error = FormatError;

        fn parts(&mut self) -> (&mut Walk<(usize, usize)>, &mut Builder) {
            (&mut self.walk, &mut self.dst)
        }
        fn visit(&mut self, node: usize) -> Result<Option<u64>> {
            // Identity 0 means none: number the nodes from 1.
            let id = node as u64 + 1;
            if let Some(slot) = self.walk.recall(id) {
                return Ok(Some(slot));
            }
            Ok(match &self.nodes[node] {
                Tree::Leaf(v) => Some(self.dst.int(*v)),
                Tree::Node(_) => {
                    self.walk.open((node, 0), id);
                    None
                }
            })
        }
        fn next_child(&mut self) -> Result<Option<usize>> {
            let cursor = self.walk.top().expect("an open container");
            let Tree::Node(children) = &self.nodes[cursor.0] else { unreachable!() };
            let next = children.get(cursor.1).copied();
            cursor.1 += 1;
            Ok(next)
        }
        fn container(&self, _: &(usize, usize)) -> Result<Container> {
            Ok(Container::Seq { tuple: false })
        }
    }

    fn write(nodes: &[Tree], share: bool) -> (Vec<u8>, bool, bool) {
        let mut arena = Arena { nodes, walk: Walk::new(share), dst: Builder::new() };
        let root = encode(&mut arena, 0).unwrap();
        let (again, cycles) = (arena.walk.met_again(), arena.walk.made_cycles());
        let mut flags = 0;
        if again {
            flags |= crate::format::FLAG_SHARED;
        }
        if cycles {
            flags |= crate::format::FLAG_CYCLIC;
        }
        arena.dst.set_flags(flags);
        (arena.dst.finish(root), again, cycles)
    }

    #[test]
    fn children_come_before_their_container_and_shared_values_are_written_once() {
        // [x, x] with x = [7]: two copies without sharing, one with.
        let nodes = [Tree::Node(vec![1, 1]), Tree::Node(vec![2]), Tree::Leaf(7)];
        let (plain, again, _) = write(&nodes, false);
        assert!(!again);
        let (shared, again, cycles) = write(&nodes, true);
        assert!(again && !cycles);
        assert!(shared.len() < plain.len());
        for bytes in [&plain, &shared] {
            let region = Region::new_verified(bytes).unwrap();
            let Value::List(outer) = region.root().unwrap() else { panic!("a list") };
            assert_eq!(outer.len, 2);
            for i in 0..2 {
                let Value::List(inner) = region.reader.seq_item(outer, i).unwrap() else { panic!("a list") };
                assert!(matches!(region.reader.seq_item(inner, 0).unwrap(), Value::Int(7)));
            }
        }
    }

    #[test]
    fn a_container_met_inside_itself_becomes_a_forward_reference() {
        // x = [1, x]
        let nodes = [Tree::Node(vec![1, 0]), Tree::Leaf(1)];
        let (bytes, again, cycles) = write(&nodes, true);
        assert!(again && cycles);
        let region = Region::new_verified(&bytes).unwrap();
        let Value::List(outer) = region.root().unwrap() else { panic!("a list") };
        let Value::List(inner) = region.reader.seq_item(outer, 1).unwrap() else { panic!("a list") };
        assert_eq!(inner.start, outer.start);
    }

    #[test]
    fn a_deep_value_takes_no_native_stack() {
        let depth = 200_000;
        let mut nodes: Vec<Tree> = (0..depth).map(|i| Tree::Node(vec![i + 1])).collect();
        nodes.push(Tree::Leaf(3));
        let (bytes, _, _) = write(&nodes, false);
        Region::new_verified(&bytes).unwrap();
    }
}
