//! Stored values to native Python objects, iteratively (any depth), with
//! the cyclic GC paused: the objects built here are all reachable from the
//! result, so collecting during the build would only waste time.

use bale_core::format::{
    pair_of, SLOT_FALSE, SLOT_NONE, SLOT_TRUE, TAG_CONST, TAG_INT, TAG_LIST, TAG_MASK, TAG_PAIR, TAG_SSTR, TAG_STR,
    TAG_TUPLE,
};
use bale_core::hash::MAX_KEY_DEPTH;
use std::rc::Rc;

use bale_core::columns::is_slice;
use bale_core::format::read_u32;
use bale_core::{Column, ColumnKind, Dict, Number, Reader, Record, Seq, Value};
use pyo3::ffi::{self, PyObject};
use pyo3::prelude::*;
use rustc_hash::FxHashMap;
use std::sync::Mutex;

use crate::convert::{malformed, owned, scalar};
use crate::errors::format_error;
use crate::region::Region;
use crate::typed::Resolved;
use pyo3::types::PyTuple;

// Note [Frames pushed where made]
// A container's frame (up to 104 bytes: a dict's frame carries its whole
// `Dict`) used to come back from `make` beside the object, as an
// `Option<Frame>`, and be copied onto the stack by the loop. The compiler
// built it on the machine stack with narrow stores and copied it with wide
// loads, which cannot be forwarded from those stores: `perf` put a third
// of `run`'s samples of a tree's thaw on one such load. The maker now
// pushes the frame itself (`push_frame`), where its fields are still in
// registers, and the loop sees that the stack grew.
enum Frame {
    Seq { obj: *mut PyObject, seq: Seq, next: usize, list: bool },
    Dict { obj: *mut PyObject, dict: Dict, keys: usize, next: usize },
}

struct Thaw<'a, 'py> {
    py: Python<'py>,
    /// Containers being filled, innermost last; each walk (`run`) owns the
    /// frames above the length it found.
    stack: Vec<Frame>,
    /// The handle `r` reads: it resolves references to other segments.
    region: &'a Region,
    r: Reader<'a>,
    /// Values a region without the SHARED flag can expand to (`step_budget`).
    budget: usize,
    /// Key objects of each shape, made once and shared by its dicts.
    shape_keys: FxHashMap<usize, usize>,
    /// Per key run (where `keys_of` put it), a dict of those keys to None
    /// that rows of more than `NEW_DICT_ROOM` keys start as (`new_dict`).
    /// (With the number of dicts of the run made before it, while none.)
    templates: FxHashMap<usize, (usize, *mut PyObject)>,
    keys: Vec<*mut PyObject>,
    /// In regions with the SHARED flag: the object made for each container,
    /// so a container referenced twice is made once (and shared, as stored).
    /// Each entry owns a reference: unverified bytes may make a parent drop
    /// the object (a dict shape that holds one key twice replaces the first
    /// value), and the memo must never point at a freed object.
    memo: Option<FxHashMap<ContainerKey, *mut PyObject>>,
    /// In CYCLIC regions: the tuples being filled, each with the number of
    /// lists and dicts open when it was opened (see `Note [Tuple cycles in thaw]`).
    open_tuples: FxHashMap<ContainerKey, usize>,
    open_mutable: usize,
    /// Containers being filled, across nested walks, and the most allowed.
    open_frames: usize,
    max_depth: usize,
    /// Whether frames are counted at all: for a depth bound or a cyclic region.
    counting: bool,
    /// The strings made last, by where their units are stored (see
    /// `StrMemo`): a string referenced from many places is made once.
    strs: StrMemo,
    /// Classes given to `thaw(types=...)`, and the record types resolved so far.
    types: Option<Py<PyTuple>>,
    resolved: FxHashMap<usize, Rc<Resolved>>,
    /// Records being rebuilt around the current one (each is made from its
    /// thawed fields, one nested walk per level).
    record_depth: usize,
}

/// Dicts of more keys than this are made as copies of a dict of their keys
/// (`Thaw::new_dict`). `PyDict_New` has room for 5 and grows at the 6th
/// and 11th key; a copy saving one growth cost more than the growth
/// (github's events, 6-9 keys: 60-61 to 66-67 µs; citm 2-5% slower).
const NEW_DICT_ROOM: usize = 10;
/// Rows of a table whose values are loaded ahead of the row being made,
/// in tables of at least `LARGE_TABLE_ROWS` rows.
const ROW_VALUES_AHEAD: usize = 4;
const LARGE_TABLE_ROWS: usize = 1024;
/// Dicts of a shape made empty before the rest are made as copies.
const TEMPLATE_AFTER: usize = 8;

/// Lists and tuples up to this length have their leading scalars made at once (`fill_scalars`).
const LEAF_SEQ_MAX: usize = 4;

/// Records nested deeper than this are refused by `thaw` (views read them at any depth).
pub const MAX_RECORD_DEPTH: usize = 500;

/// Strings made, by the address and byte length of their stored units (or,
/// for a dict key stored inline, by its slot word), in a direct-mapped
/// table. Equal strings are stored once (the writer keeps
/// one copy of a string met again), so a vocabulary of a few thousand
/// words thaws into that many objects, not one per reference, as pickle's
/// memo does. Sharing immutable strings is invisible, except to `is`. Each
/// entry owns a reference.
///
/// The table starts as the one the last thaw left (emptied, up to 4,096
/// places: `Note [The memo table kept between thaws]`) or small, and
/// emptying it visits only the places filled, so thawing a small value
/// neither clears nor walks a large one; it grows fourfold whenever it is
/// a quarter full;
/// an entry goes to the first free place of a window of `STR_MEMO_WINDOW`
/// from its home. Nothing is evicted: a string with no free place in its
/// window, or met once the largest table is half full, is made and not
/// remembered, so a vocabulary of up to 4,096 words thaws into one object
/// per word. Once the largest table is half full, the memo counts its
/// hits, and turns itself off for the rest of the thaw if fewer than one
/// lookup in eight finds a string: distinct strings then cost nothing
/// more than making them. (A fixed, direct-mapped 4,096 entries
/// made a third of a 2,000-word vocabulary evict each other, and cost a
/// small thaw more than the thaw itself to clear and walk.)
struct StrMemo {
    entries: Box<[(usize, usize, *mut PyObject)]>,
    bits: u32,
    /// Entries in use.
    used: usize,
    /// Where they are: emptying the table visits these, not every place.
    filled: Vec<u32>,
    /// Lookups and hits counted since the largest table became half full
    /// (`saturated`), and whether that made the memo stop (`off`).
    saturated: bool,
    lookups: u32,
    hits: u32,
    off: bool,
}

const STR_MEMO_FIRST_BITS: u32 = 6;
const STR_MEMO_MAX_BITS: u32 = 14;
const STR_MEMO_WINDOW: usize = 8;

/// An empty memo table kept from the last thaw (`StrMemo::new`).
struct KeptTable(Box<[(usize, usize, *mut PyObject)]>, Vec<u32>);

// SAFETY: a kept table is empty: every entry null, no reference held.
unsafe impl Send for KeptTable {}

// Note [The memo table kept between thaws]
// A thaw of a few hundred strings (the github corpus: 764) grew its memo
// from 64 places to 4,096, zeroing each new table and walking the last
// one to let go of its entries: with the insertions, a tenth of the thaw.
// The table of the last thaw is kept, emptied through the list of the
// places it filled (not by a pass over every place), so a thaw starts
// with a table as large as the last one needed, and a small thaw after a
// large one visits only what it fills. At most one table, of up to
// `STR_MEMO_KEPT_BITS`, is kept; a thaw that finds it taken (another
// thread, a nested thaw) starts small as before.
static KEPT_MEMO: Mutex<Option<KeptTable>> = Mutex::new(None);
const STR_MEMO_KEPT_BITS: u32 = 12;

impl StrMemo {
    fn new() -> StrMemo {
        let (entries, filled) = match crate::spare_buffer::take_kept(&KEPT_MEMO) {
            Some(KeptTable(entries, filled)) => (entries, filled),
            None => (Self::table(STR_MEMO_FIRST_BITS), Vec::new()),
        };
        StrMemo {
            bits: entries.len().trailing_zeros(),
            entries,
            used: 0,
            filled,
            saturated: false,
            lookups: 0,
            hits: 0,
            off: false,
        }
    }

    fn table(bits: u32) -> Box<[(usize, usize, *mut PyObject)]> {
        vec![(0, 0, std::ptr::null_mut()); 1 << bits].into_boxed_slice()
    }

    #[inline(always)]
    fn home(&self, at: usize) -> usize {
        bale_core::hash::place_of(at as u64, self.bits)
    }

    /// The string stored at `at` (`shape`: its byte length and width), a
    /// new reference, if this memo holds it. Entries are never removed, so
    /// a free place ends the search.
    #[inline(always)]
    unsafe fn hit(&mut self, at: usize, shape: usize) -> Option<*mut PyObject> {
        if self.off {
            return None;
        }
        let found = self.find(at, shape);
        if self.saturated {
            self.count(found.is_some());
        }
        found
    }

    #[inline(always)]
    unsafe fn find(&self, at: usize, shape: usize) -> Option<*mut PyObject> {
        let (home, mask) = (self.home(at), self.entries.len() - 1);
        for k in 0..STR_MEMO_WINDOW {
            let entry = &self.entries[(home + k) & mask];
            if entry.2.is_null() {
                return None;
            }
            if entry.0 == at && entry.1 == shape {
                ffi::Py_INCREF(entry.2);
                return Some(entry.2);
            }
        }
        None
    }

    /// Counts a lookup in a saturated memo; every 4,096 of them, turns the
    /// memo off if fewer than an eighth found their string.
    #[inline]
    fn count(&mut self, hit: bool) {
        self.lookups += 1;
        self.hits += hit as u32;
        if self.lookups == 4096 {
            self.off = self.hits * 8 < self.lookups;
            self.lookups = 0;
            self.hits = 0;
        }
    }

    /// Puts an entry (owning a reference) at the first free place of its
    /// window; with none free, lets go of the entry's reference.
    unsafe fn insert(&mut self, entry: (usize, usize, *mut PyObject)) {
        let (home, mask) = (self.home(entry.0), self.entries.len() - 1);
        for k in 0..STR_MEMO_WINDOW {
            let at = (home + k) & mask;
            let place = &mut self.entries[at];
            if place.2.is_null() {
                *place = entry;
                self.used += 1;
                self.filled.push(at as u32);
                return;
            }
        }
        ffi::Py_DecRef(entry.2);
    }

    /// Moves the entries into a table four times larger (keeping their references).
    unsafe fn grow(&mut self) {
        self.bits = (self.bits + 2).min(STR_MEMO_MAX_BITS);
        let old = std::mem::replace(&mut self.entries, Self::table(self.bits));
        let filled = std::mem::take(&mut self.filled);
        self.used = 0;
        for &at in &filled {
            self.insert(old[at as usize]);
        }
    }

    /// The string stored at `at` (`shape`: its byte length and width), made by `make` on a miss.
    #[inline(always)]
    unsafe fn get(
        &mut self,
        at: usize,
        shape: usize,
        make: impl FnOnce() -> PyResult<*mut PyObject>,
    ) -> PyResult<*mut PyObject> {
        if let Some(p) = self.hit(at, shape) {
            return Ok(p);
        }
        Ok(self.keep(at, shape, make()?))
    }

    /// Remembers `p`, the string stored at `at` that `hit` did not find
    /// (unless the memo is full), and returns it.
    unsafe fn keep(&mut self, at: usize, shape: usize, p: *mut PyObject) -> *mut PyObject {
        if (self.used + 1) * 4 > self.entries.len() {
            if self.bits < STR_MEMO_MAX_BITS {
                self.grow();
            } else if (self.used + 1) * 2 > self.entries.len() {
                self.saturated = true;
                return p;
            }
        }
        ffi::Py_INCREF(p);
        self.insert((at, shape, p));
        p
    }
}

impl Drop for StrMemo {
    fn drop(&mut self) {
        for &at in &self.filled {
            let entry = std::mem::replace(&mut self.entries[at as usize], (0, 0, std::ptr::null_mut()));
            unsafe { ffi::Py_DecRef(entry.2) };
        }
        self.filled.clear();
        // Every place is empty again (`Note [The memo table kept between thaws]`).
        if self.bits <= STR_MEMO_KEPT_BITS {
            let table = KeptTable(std::mem::replace(&mut self.entries, Box::new([])), std::mem::take(&mut self.filled));
            crate::spare_buffer::keep_larger(&KEPT_MEMO, table, |t| t.0.len());
        }
    }
}

impl Drop for Thaw<'_, '_> {
    fn drop(&mut self) {
        for &k in self.keys.iter().chain(self.templates.values().map(|t| &t.1).filter(|t| !t.is_null())) {
            unsafe { ffi::Py_DecRef(k) };
        }
        if let Some(memo) = &self.memo {
            for &p in memo.values() {
                unsafe { ffi::Py_DecRef(p) };
            }
        }
    }
}

// Note [Tuple cycles in thaw]
// `verify` refuses a tuple that contains itself through tuples only (see
// `Note [Cycles through tuples only]` in bale-core), but thaw also reads
// unverified bytes and must not build such an object either: Python code
// (`hash`, `==`) recurses through it without end. A tuple met again while
// it is being filled closes a cycle; the cycle passes through a list or a
// dict exactly when one was opened after the tuple and is still open, that
// is when more lists and dicts are open now than when the tuple was opened.

/// The most references between segments a thaw follows one inside another:
/// writers only make references to values committed before, so only a
/// damaged store has a cycle of them, and this bound stops it.
pub const MAX_EXTERN_DEPTH: usize = 200;

thread_local! {
    /// References between segments being followed by the running thaw.
    static EXTERN_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The objects made for the values references name, during the running
    /// thaw: a value named many times (a chain of `[prev, prev]`, or one
    /// base under many keys) is made once, so a thaw costs what the
    /// distinct values cost, never more.
    static EXTERN_MADE: std::cell::RefCell<FxHashMap<ExternKey, Py<PyAny>>> =
        std::cell::RefCell::new(FxHashMap::default());
}

/// What a reference names: its registry's family (registries of one family
/// agree on every byte they hold), segment, end, flags and slot.
type ExternKey = (u64, u32, u64, u32, u64);

/// One thaw's state of the references it follows, set aside while it
/// runs and put back when it ends, however it ends: a thaw that Python
/// code run by another starts (a record class's `__init__` calling
/// `bale.thaw`) shares no object and no depth with it.
struct ThawScope {
    outer: FxHashMap<ExternKey, Py<PyAny>>,
    outer_depth: usize,
}

impl ThawScope {
    fn enter() -> ThawScope {
        let outer = EXTERN_MADE.with_borrow_mut(std::mem::take);
        ThawScope { outer, outer_depth: EXTERN_DEPTH.replace(0) }
    }
}

impl Drop for ThawScope {
    fn drop(&mut self) {
        // Swapped out first: dropping the objects may run Python code.
        let made = EXTERN_MADE.with_borrow_mut(|m| std::mem::replace(m, std::mem::take(&mut self.outer)));
        EXTERN_DEPTH.set(self.outer_depth);
        drop(made);
    }
}

/// A deep native copy of `v`.
pub fn thaw_value(py: Python<'_>, region: &Region, v: Value<'_>) -> PyResult<Py<PyAny>> {
    thaw_with_types(py, region, v, None)
}

/// A deep native copy of `v`, records rebuilt with the classes of `types`
/// first (then this process's registry).
pub fn thaw_with_types(
    py: Python<'_>,
    region: &Region,
    v: Value<'_>,
    types: Option<Py<PyTuple>>,
) -> PyResult<Py<PyAny>> {
    thaw_bounded(py, region, v, types, usize::MAX)
}

/// Like `thaw_with_types`, raising `RecursionError` where containers nest
/// more than `max_depth` deep: for copies that Python's recursive code
/// (`hash`, `repr`, comparisons) walks next.
pub fn thaw_bounded(
    py: Python<'_>,
    region: &Region,
    v: Value<'_>,
    types: Option<Py<PyTuple>>,
    max_depth: usize,
) -> PyResult<Py<PyAny>> {
    let _scope = ThawScope::enter();
    thaw_within(py, region, v, types, max_depth)
}

/// `thaw_bounded` as part of the running thaw: a value a reference names.
fn thaw_within(
    py: Python<'_>,
    region: &Region,
    v: Value<'_>,
    types: Option<Py<PyTuple>>,
    max_depth: usize,
) -> PyResult<Py<PyAny>> {
    // Made once per container, a valid region expands to at most `step_budget` values.
    let budget = bale_core::hash::step_budget(region.buf().len());
    let memo = region.is_shared().then(FxHashMap::default);
    let mut t = Thaw {
        py,
        stack: Vec::new(),
        region,
        r: region.reader(),
        budget,
        shape_keys: FxHashMap::default(),
        templates: FxHashMap::default(),
        keys: Vec::new(),
        memo,
        strs: StrMemo::new(),
        types,
        resolved: FxHashMap::default(),
        record_depth: 0,
        open_tuples: FxHashMap::default(),
        open_mutable: 0,
        open_frames: 0,
        max_depth,
        counting: max_depth != usize::MAX || region.is_cyclic(),
    };
    unsafe {
        let _pause = crate::gc_pause::GcPause::begin();
        t.run(v)
    }
}

impl<'a, 'py> Thaw<'a, 'py> {
    #[inline]
    fn spend(&mut self) -> PyResult<()> {
        if self.budget == 0 {
            return Err(malformed(
                "region expands to more values than its size allows: it shares containers without the SHARED flag",
            ));
        }
        self.budget -= 1;
        Ok(())
    }

    unsafe fn run(&mut self, v: Value<'a>) -> PyResult<Py<PyAny>> {
        // This walk's frames lie above `base` on the shared stack (a record's
        // fields are thawed by nested walks). An error abandons the whole
        // thaw, so neither the stack nor the frame counts need unwinding
        // when one leaves frames open.
        let base = self.stack.len();
        let root = owned(self.py, self.make(v)?)?;

        // Each frame fills its elements in order and leaves the loop only to
        // descend into a child container, which it has already inserted and
        // whose frame its maker pushed (see `Note [Frames pushed where made]`).
        while self.stack.len() > base {
            let top = self.stack.len() - 1;
            let descended = match self.stack[top] {
                Frame::Seq { obj, seq, next, list } => {
                    let mut i = next;
                    let mut descended = false;
                    while i < seq.len && !descended {
                        self.spend()?;
                        let slot = self.r.seq_slot(seq, i).map_err(format_error)?;
                        let c;
                        (c, descended) = self.element(slot, seq.start)?;
                        if list {
                            ffi::PyList_SET_ITEM(obj, i as ffi::Py_ssize_t, c);
                        } else {
                            ffi::PyTuple_SET_ITEM(obj, i as ffi::Py_ssize_t, c);
                        }
                        i += 1;
                    }
                    if let Frame::Seq { next, .. } = &mut self.stack[top] {
                        *next = i;
                    }
                    descended
                }
                Frame::Dict { obj, dict, keys, next } => {
                    let mut i = next;
                    let mut descended = false;
                    while i < dict.len && !descended {
                        self.spend()?;
                        let c;
                        (c, descended) = if dict.row.is_some() {
                            let depth = self.stack.len();
                            let c = self.make(self.r.dict_value(dict, i).map_err(format_error)?)?;
                            (c, self.stack.len() > depth)
                        } else {
                            self.element(self.r.word(dict.values + 8 * i).map_err(format_error)?, dict.start)?
                        };
                        // An OrderedDict keeps its order beside its dict: set through it.
                        let rc = if dict.class & 0xFF == bale_core::dict_class::ORDERED {
                            ffi::PyObject_SetItem(obj, self.keys[keys + self.r.dict_key_index(dict, i)], c)
                        } else {
                            ffi::PyDict_SetItem(obj, self.keys[keys + self.r.dict_key_index(dict, i)], c)
                        };
                        ffi::Py_DecRef(c);
                        if rc != 0 {
                            return Err(PyErr::fetch(self.py));
                        }
                        i += 1;
                    }
                    if let Frame::Dict { next, .. } = &mut self.stack[top] {
                        *next = i;
                    }
                    descended
                }
            };
            if !descended {
                let done = self.stack.pop().expect("the top frame");
                self.close_frame(&done);
            }
        }
        Ok(root)
    }

    /// Opens a frame for a container just made (see `Note [Frames pushed
    /// where made]`): counted in, then pushed.
    #[inline(always)]
    fn push_frame(&mut self, f: Frame) -> PyResult<()> {
        self.open_frame(&f)?;
        self.stack.push(f);
        Ok(())
    }

    /// Counts a frame in (see `Note [Tuple cycles in thaw]`); refuses one
    /// past the depth allowed.
    #[inline(always)]
    fn open_frame(&mut self, f: &Frame) -> PyResult<()> {
        if !self.counting {
            return Ok(());
        }
        if self.open_frames >= self.max_depth {
            return Err(pyo3::exceptions::PyRecursionError::new_err(format!(
                "maximum recursion depth exceeded: the value nests more than {} containers deep",
                self.max_depth
            )));
        }
        self.open_frames += 1;
        if self.r.cyclic() {
            match f {
                Frame::Seq { seq, list: false, .. } => {
                    self.open_tuples.insert((2, seq.start, seq.len), self.open_mutable);
                }
                _ => self.open_mutable += 1,
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn close_frame(&mut self, f: &Frame) {
        if !self.counting {
            return;
        }
        self.open_frames -= 1;
        if self.r.cyclic() {
            match f {
                Frame::Seq { seq, list: false, .. } => {
                    self.open_tuples.remove(&(2, seq.start, seq.len));
                }
                _ => self.open_mutable -= 1,
            }
        }
    }

    /// The object of an element's slot (in a container whose extent starts
    /// at `limit`), and whether it is a container whose frame was pushed to
    /// fill it. Scalars first: they are most elements, and cannot push.
    #[inline(always)]
    unsafe fn element(&mut self, slot: u64, limit: usize) -> PyResult<(*mut PyObject, bool)> {
        if let Some(c) = self.scalar_made(slot, limit)? {
            return Ok((c, false));
        }
        let depth = self.stack.len();
        let c = match self.container_made(slot, limit)? {
            Some(c) => c,
            None => self.make(self.r.decode(slot, limit).map_err(format_error)?)?,
        };
        Ok((c, self.stack.len() > depth))
    }

    /// The scalar a slot holds, made without a `Value`: an inline one, a
    /// stored string, a number held in an object; `None` for any other.
    #[inline(always)]
    unsafe fn scalar_made(&mut self, slot: u64, limit: usize) -> PyResult<Option<*mut PyObject>> {
        // Stored strings first, by their tag alone: a word of a vocabulary
        // is a memo hit of a few cycles, which the inline kinds' jump table
        // before it lengthened by 7%.
        if slot & TAG_MASK == TAG_STR {
            return self.str_made(slot, limit);
        }
        if let Some(c) = self.inline_scalar(slot)? {
            return Ok(Some(c));
        }
        self.number_made(slot, limit)
    }

    /// The string of a STR slot (found in a container whose extent starts
    /// at `limit`) that this thaw has made already, without decoding the
    /// slot into a `Value`: a vocabulary's words cost a lookup each. Its
    /// units were checked when it was made; the place is checked here.
    #[inline(always)]
    unsafe fn str_made(&mut self, slot: u64, limit: usize) -> PyResult<Option<*mut PyObject>> {
        let Some((at, shape)) = self.r.stored_str_place(slot, limit).map_err(format_error)? else {
            return Ok(None);
        };
        if let Some(p) = self.strs.hit(at, shape) {
            return Ok(Some(p));
        }
        // A miss: the string is read and made here, not through a `Value`
        // (see `Reader::stored_str`).
        let s = self.r.stored_str(slot, limit).map_err(format_error)?;
        let p = crate::convert::make_str(self.py, &s)?;
        Ok(Some(self.strs.keep(at, shape, p)))
    }

    /// The object of an INT, CONST, PAIR or inline-string slot, made
    /// without decoding a `Value` (the common elements of trees and
    /// records; a `Value` moved through memory stalls the loop).
    #[inline(always)]
    unsafe fn inline_scalar(&self, slot: u64) -> PyResult<Option<*mut PyObject>> {
        let p = match slot & TAG_MASK {
            TAG_INT => ffi::PyLong_FromLongLong((slot as i64) >> 3),
            TAG_SSTR => {
                let n = ((slot >> 3) & 7) as usize;
                let b = slot.to_le_bytes();
                if b[1..1 + n].iter().any(|&c| c >= 0x80) {
                    return Ok(None); // `decode` names the error
                }
                crate::ffi::pyunicode::new_ascii(&b[1..1 + n])
            }
            TAG_PAIR => match pair_of(slot) {
                Some((a, b)) => crate::convert::make_pair(self.py, a, b)?,
                None => return Ok(None),
            },
            TAG_CONST => {
                let p = match slot {
                    SLOT_NONE => ffi::Py_None(),
                    SLOT_TRUE => ffi::Py_True(),
                    SLOT_FALSE => ffi::Py_False(),
                    _ => return Ok(None),
                };
                ffi::Py_IncRef(p);
                p
            }
            _ => return Ok(None),
        };
        if p.is_null() {
            return Err(PyErr::fetch(self.py));
        }
        Ok(Some(p))
    }

    /// The number an OBJ slot holds (an int beyond the INT slot, a float), as
    /// a new object, made without a `Value` (see `Reader::number_object`).
    #[inline(always)]
    unsafe fn number_made(&self, slot: u64, limit: usize) -> PyResult<Option<*mut PyObject>> {
        let p = match self.r.number_object(slot, limit).map_err(format_error)? {
            None => return Ok(None),
            Some(Number::Int(i)) => ffi::PyLong_FromLongLong(i),
            Some(Number::Float(f)) => ffi::PyFloat_FromDouble(f),
            Some(Number::Big(b)) => crate::convert::big_int(b),
        };
        if p.is_null() {
            return Err(PyErr::fetch(self.py));
        }
        Ok(Some(p))
    }

    /// A new object for `v`; a container comes back empty, with the frame
    /// that fills it pushed.
    unsafe fn make(&mut self, v: Value<'a>) -> PyResult<*mut PyObject> {
        // Sequences first: the inner nodes of trees, without a memo to consult.
        if self.memo.is_none() && matches!(v, Value::List(_) | Value::Tuple(_)) {
            return self.make_new(v);
        }
        if let Value::Str(s) = &v {
            if let Some((at, len)) = s.stored_at() {
                // The width too: damaged bytes may read one place at two widths.
                let shape = len << 2 | s.width as usize;
                let py = self.py;
                return self.strs.get(at, shape, || crate::convert::make_str(py, s));
            }
        }
        if let Some(p) = scalar(self.py, &v) {
            return p;
        }
        let Some(memo) = &self.memo else {
            return self.make_new(v);
        };
        let key = container_key(&v);
        if key == NOT_A_CONTAINER {
            return self.make_new(v);
        }
        if let Some(&p) = memo.get(&key) {
            if self.open_tuples.get(&key) == Some(&self.open_mutable) {
                return Err(malformed(
                    "a tuple contains itself through tuples only (Python cannot build such a value)",
                ));
            }
            ffi::Py_IncRef(p);
            return Ok(p);
        }
        let made = self.make_new(v)?;
        if let Some(memo) = &mut self.memo {
            ffi::Py_IncRef(made);
            memo.insert(key, made);
        }
        Ok(made)
    }

    unsafe fn make_new(&mut self, v: Value<'a>) -> PyResult<*mut PyObject> {
        let py = self.py;
        Ok(match v {
            Value::List(seq) => return self.make_seq(seq, true),
            Value::Tuple(seq) => return self.make_seq(seq, false),
            Value::Dict(dict) => self.make_dict(dict)?,
            Value::Set(_) | Value::FrozenSet(_) => self.key(v, 0)?,
            Value::NumList(l) => {
                let obj = owned(py, ffi::PyList_New(l.len as ffi::Py_ssize_t))?;
                for i in 0..l.len {
                    self.spend()?;
                    let item = self.r.num_item(l, i).map_err(format_error)?;
                    let p = scalar(py, &item).expect("numbers are scalars")?;
                    ffi::PyList_SET_ITEM(obj.as_ptr(), i as ffi::Py_ssize_t, p);
                }
                obj.into_ptr()
            }
            Value::NdArray(a) => {
                let data = pyo3::types::PyBytes::new(py, a.data);
                let copy = crate::typed::ndarray_from_bytes(py, &data, &a)?;
                copy.into_ptr()
            }
            Value::Record(rec) => self.record(rec)?,
            Value::Column(c) => self.column(c)?,
            Value::Extern(x) => self.extern_value(&x)?.into_ptr(),
            _ => unreachable!("scalars are handled above"),
        })
    }

    /// A new dict (or `collections` dict) for `dict`, empty, with the frame
    /// that fills it pushed.
    #[inline(always)]
    unsafe fn make_dict(&mut self, dict: Dict) -> PyResult<*mut PyObject> {
        let keys = self.keys_of(dict)?;
        let obj = if dict.class == bale_core::dict_class::PLAIN {
            // (An ID_DICT holds some of its key table's keys: its own order.)
            let len = if dict.ids == 0 && dict.len == dict.shape.len { dict.len } else { 0 };
            self.new_dict(keys, len)?
        } else {
            crate::typed::new_dict_of_class(self.py, dict.class)?
        };
        if dict.len > 0 {
            // Not pushed if this fails: `obj` is still ours to free.
            if let Err(e) = self.push_frame(Frame::Dict { obj, dict, keys, next: 0 }) {
                ffi::Py_DecRef(obj);
                return Err(e);
            }
        }
        Ok(obj)
    }

    /// A list, tuple or plain dict that an element's slot holds, made
    /// without a `Value` (see `Reader::dict_object`), its frame pushed;
    /// `None` for any other slot, and in regions whose containers may be
    /// shared, where `make` consults the memo of containers.
    #[inline(always)]
    unsafe fn container_made(&mut self, slot: u64, limit: usize) -> PyResult<Option<*mut PyObject>> {
        if self.memo.is_some() {
            return Ok(None);
        }
        if matches!(slot & TAG_MASK, TAG_LIST | TAG_TUPLE) {
            let items = self.r.seq_slot_items(slot, limit).map_err(format_error)?;
            return self.make_seq(items, slot & TAG_MASK == TAG_LIST).map(Some);
        }
        match self.r.dict_object(slot, limit).map_err(format_error)? {
            Some(dict) => self.make_dict(dict).map(Some),
            None => Ok(None),
        }
    }

    /// The value in another segment that `x` names, thawed by a walk of its
    /// own: its offsets are another region's.
    #[cold]
    fn extern_value(&mut self, x: &bale_core::Extern) -> PyResult<Py<PyAny>> {
        let family = self.region.place().map_or(0, |p| p.segments.family());
        let key = (family, x.segment, x.end, x.flags, x.slot);
        if let Some(made) = EXTERN_MADE.with_borrow(|m| m.get(&key).map(|p| p.clone_ref(self.py))) {
            return Ok(made);
        }
        let target = self.region.resolve_extern(x)?;
        let depth = EXTERN_DEPTH.get();
        if depth >= MAX_EXTERN_DEPTH {
            return Err(malformed(&format!(
                "references between segments nest more than {MAX_EXTERN_DEPTH} deep (or form a cycle, in a damaged store)"
            )));
        }
        // Each reference followed is a nested walk, natively recursive: a
        // thread with a small stack may not hold 200 of them.
        crate::errors::check_stack(c" while following references between segments")?;
        EXTERN_DEPTH.set(depth + 1);
        let made = target.root_value().and_then(|v| {
            thaw_within(self.py, &target, v, self.types.as_ref().map(|t| t.clone_ref(self.py)), self.max_depth)
        });
        EXTERN_DEPTH.set(depth);
        if let Ok(made) = &made {
            EXTERN_MADE.with_borrow_mut(|m| m.insert(key, made.clone_ref(self.py)));
        }
        made
    }

    /// A new list or tuple of `seq`'s items: filled when they are all
    /// inline scalars, else empty with the frame that fills it pushed.
    /// Inlined: its argument, moved through memory, stalls the copy.
    #[inline(always)]
    unsafe fn make_seq(&mut self, seq: Seq, list: bool) -> PyResult<*mut PyObject> {
        let n = seq.len as ffi::Py_ssize_t;
        let obj = if list { ffi::PyList_New(n) } else { ffi::PyTuple_New(n) };
        if obj.is_null() {
            return Err(PyErr::fetch(self.py));
        }
        // Until it is pushed or handed back, `obj` is this function's to free
        // (its unfilled items are null, which its dealloc skips).
        let filled = match self.fill_scalars(obj, seq, list) {
            Ok(filled) => filled,
            Err(e) => {
                ffi::Py_DecRef(obj);
                return Err(e);
            }
        };
        if filled == seq.len {
            return Ok(obj);
        }
        self.prefetch_children(seq, filled);
        if let Err(e) = self.push_frame(Frame::Seq { obj, seq, next: filled, list }) {
            ffi::Py_DecRef(obj);
            return Err(e);
        }
        Ok(obj)
    }

    /// An instance rebuilt from a record: its fields thawed first (a nested
    /// walk), then the class made from them.
    unsafe fn record(&mut self, rec: Record) -> PyResult<*mut PyObject> {
        let res = match self.resolved.get(&rec.ty.start) {
            Some(r) => r.clone(),
            None => {
                let r = Rc::new(crate::typed::resolve(self.py, &self.r, rec.ty, self.types.as_ref())?);
                self.resolved.insert(rec.ty.start, r.clone());
                r
            }
        };
        if self.record_depth >= MAX_RECORD_DEPTH {
            return Err(crate::errors::ThawError::new_err(format!(
                "records nested more than {MAX_RECORD_DEPTH} deep cannot be thawed (read them through views)"
            )));
        }
        // Records recurse natively; a thread with a small stack (or a thaw
        // called deep in Python's own recursion) may not hold 500 levels.
        crate::errors::check_stack(c" while thawing nested records")?;
        self.record_depth += 1;
        let values = (|| -> PyResult<Bound<'py, PyTuple>> {
            let t = owned(self.py, ffi::PyTuple_New(rec.len as ffi::Py_ssize_t))?.into_bound(self.py);
            for i in 0..rec.len {
                self.spend()?;
                let v = self.r.record_value(rec, i).map_err(format_error)?;
                let p = self.run(v)?;
                ffi::PyTuple_SET_ITEM(t.as_ptr(), i as ffi::Py_ssize_t, p.into_ptr());
            }
            Ok(t.cast_into_unchecked())
        })();
        self.record_depth -= 1;
        Ok(crate::typed::build_record(self.py, &res, values?)?.into_ptr())
    }

    /// A list from a columnar object, column by column: a table's columns
    /// are thawed whole, then zipped into dicts that share the key objects.
    unsafe fn column(&mut self, c: Column) -> PyResult<*mut PyObject> {
        if self.record_depth >= MAX_RECORD_DEPTH {
            return Err(malformed(&format!("columns nested more than {MAX_RECORD_DEPTH} deep")));
        }
        crate::errors::check_stack(c" while thawing nested columns")?;
        self.record_depth += 1;
        let out = self.column_inner(c);
        self.record_depth -= 1;
        out
    }

    unsafe fn column_inner(&mut self, c: Column) -> PyResult<*mut PyObject> {
        let py = self.py;
        let out = owned(py, ffi::PyList_New(c.len as ffi::Py_ssize_t))?;
        let list = out.as_ptr();
        match c.kind {
            // An item of a ROWS_COLUMN (thawed alone: a whole ROWS_COLUMN
            // thaws its table once and slices it): its rows one by one.
            ColumnKind::Rows { .. } if is_slice(&Value::Column(c)) => {
                for i in 0..c.len {
                    self.spend()?;
                    let row = self.r.column_item(c, i).map_err(format_error)?;
                    let d = self.run(row)?;
                    ffi::PyList_SET_ITEM(list, i as ffi::Py_ssize_t, d.into_ptr());
                }
            }
            ColumnKind::Rows { shape, cols, keyed } => {
                let keys = self.keys_of(Dict {
                    start: c.start,
                    shape,
                    ids: 0,
                    values: cols,
                    len: shape.len,
                    row: Some(0),
                    class: 0,
                })?;
                let mut columns = Vec::with_capacity(shape.len);
                for j in 0..shape.len {
                    let col = self.r.table_column(c.start, cols, j).map_err(format_error)?;
                    if self.r.list_len(&col) != Some(c.first + c.len) {
                        return Err(malformed("table column is not a list as long as its table"));
                    }
                    columns.push(self.run(col)?);
                }
                if keyed != 0 {
                    // A KEYED_TABLE: each row None, or a dict of its own
                    // keys (ids into the shape), in its own order, from
                    // the columns made whole above (the cells a row lacks
                    // were made and are let go of with their columns).
                    for i in 0..c.len {
                        self.spend()?;
                        let item = match self.r.column_item(c, i).map_err(format_error)? {
                            Value::Dict(d) => {
                                let d_obj = owned(py, ffi::PyDict_New())?;
                                for place in 0..d.len {
                                    let j = self.r.dict_key_index(d, place);
                                    let v = crate::ffi::pylist::item(columns[j].as_ptr(), c.first + i);
                                    if ffi::PyDict_SetItem(d_obj.as_ptr(), self.keys[keys + j], v) != 0 {
                                        return Err(PyErr::fetch(py));
                                    }
                                }
                                d_obj.into_ptr()
                            }
                            _ => {
                                ffi::Py_IncRef(ffi::Py_None());
                                ffi::Py_None()
                            }
                        };
                        ffi::PyList_SET_ITEM(list, i as ffi::Py_ssize_t, item);
                    }
                    return Ok(out.into_ptr());
                }
                // In a large table, the values were made a whole column ago,
                // out of cache: they are loaded a few rows ahead, and a column
                // list held only here hands each over, let go of while in
                // cache, not again, cold, when the list is freed (one the memo
                // of containers holds is left whole). A small table's are in
                // cache (citm: 1,236 tables of 4-16 rows, 3% slower to thaw
                // with a call per value to let go of it).
                let large = c.len >= LARGE_TABLE_ROWS;
                for i in 0..c.len {
                    self.spend()?;
                    if large && i + ROW_VALUES_AHEAD < c.len {
                        for col in &columns {
                            let ahead = crate::ffi::pylist::item(col.as_ptr(), c.first + i + ROW_VALUES_AHEAD);
                            crate::compactor::prefetch(ahead);
                        }
                    }
                    let d = owned(py, self.new_dict(keys, shape.len)?)?;
                    for (j, col) in columns.iter().enumerate() {
                        let v = crate::ffi::pylist::item(col.as_ptr(), c.first + i);
                        if ffi::PyDict_SetItem(d.as_ptr(), self.keys[keys + j], v) != 0 {
                            return Err(PyErr::fetch(py));
                        }
                        if large && ffi::Py_REFCNT(col.as_ptr()) == 1 {
                            ffi::PyList_SET_ITEM(col.as_ptr(), (c.first + i) as ffi::Py_ssize_t, std::ptr::null_mut());
                            ffi::Py_DecRef(v);
                        }
                    }
                    ffi::PyList_SET_ITEM(list, i as ffi::Py_ssize_t, d.into_ptr());
                }
            }
            ColumnKind::Strs { .. } | ColumnKind::Slots32 { .. } => {
                for i in 0..c.len {
                    self.spend()?;
                    let v = self.r.column_item(c, i).map_err(format_error)?;
                    let p = scalar(py, &v).expect("strings, None, bools and ints are scalars")?;
                    ffi::PyList_SET_ITEM(list, i as ffi::Py_ssize_t, p);
                }
            }
            // Each string of the dictionary made once, each row a reference
            // to it (as the slots of a LIST share a stored string's object).
            ColumnKind::Codes { dict, cells } => {
                let mut made = Vec::with_capacity(dict.len);
                for i in 0..dict.len {
                    self.spend()?;
                    let slot = self.r.seq_slot(dict, i).map_err(format_error)?;
                    let fast = match slot & TAG_MASK {
                        TAG_SSTR | TAG_STR => self.scalar_made(slot, dict.start)?,
                        _ => None,
                    };
                    let p = match fast {
                        Some(p) => p,
                        // Anything else is decoded, and refused, as the reader does.
                        None => {
                            let v = self.r.code_item(dict, i, dict.pos + 8 * i).map_err(format_error)?;
                            scalar(py, &v).expect("strings are scalars")?
                        }
                    };
                    made.push(owned(py, p)?);
                }
                let buf = self.r.buf();
                for i in 0..c.len {
                    self.spend()?;
                    let code = read_u32(buf, cells + 4 * (c.first + i)) as usize;
                    let Some(p) = made.get(code) else {
                        // A code past the dictionary: the reader's own error.
                        return Err(match self.r.column_item(c, i) {
                            Err(e) => format_error(e),
                            Ok(_) => unreachable!("a code past its dictionary is refused"),
                        });
                    };
                    ffi::PyList_SET_ITEM(list, i as ffi::Py_ssize_t, p.clone_ref(py).into_ptr());
                }
            }
            ColumnKind::Lists { child, offs } => {
                let whole = self.run(child.value())?;
                let buf = self.r.buf();
                for i in 0..c.len {
                    self.spend()?;
                    let at = offs + 4 * (c.first + i);
                    let (a, b) = (read_u32(buf, at) as usize, read_u32(buf, at + 4) as usize);
                    if a > b || b > child.len() {
                        return Err(malformed("list column offsets decrease or run past its child"));
                    }
                    let part = ffi::PyList_GetSlice(whole.as_ptr(), a as ffi::Py_ssize_t, b as ffi::Py_ssize_t);
                    ffi::PyList_SET_ITEM(list, i as ffi::Py_ssize_t, owned(py, part)?.into_ptr());
                }
            }
        }
        Ok(out.into_ptr())
    }

    /// Starts loading what the items of a short list or tuple point to.
    /// A region is laid out children first, and thaw reads it parents
    /// first: in a tree, a node's second child lies a whole subtree away
    /// from its first, and each node's first read was a miss the loop
    /// waited for (a fifth of the thaw of a tree of big ints, `perf`).
    /// Loading all of a node's children at once overlaps those misses.
    #[inline(always)]
    fn prefetch_children(&self, seq: Seq, from: usize) {
        if seq.len > LEAF_SEQ_MAX {
            return;
        }
        let buf = self.r.buf();
        for ahead in [512usize, 1024] {
            if let Some(p) = buf.get(seq.pos + ahead) {
                crate::compactor::prefetch(p as *const u8 as *mut PyObject);
            }
        }
        for i in from..seq.len {
            if let Ok(slot) = self.r.seq_slot(seq, i) {
                if let Some(at) = Reader::slot_target(slot).filter(|&at| at < buf.len()) {
                    crate::compactor::prefetch(buf[at..].as_ptr() as *mut PyObject);
                }
            }
        }
    }

    /// Fills the leading scalar items of a short list or tuple (the leaves
    /// of trees: inline slots, numbers held in objects, stored strings)
    /// without a frame, and says how many it filled: all of them, or up to
    /// the first container, whose frame then fills the rest.
    #[inline]
    unsafe fn fill_scalars(&mut self, obj: *mut PyObject, seq: Seq, list: bool) -> PyResult<usize> {
        if seq.len > LEAF_SEQ_MAX {
            return Ok(0);
        }
        for i in 0..seq.len {
            let slot = self.r.seq_slot(seq, i).map_err(format_error)?;
            let Some(c) = self.scalar_made(slot, seq.start)? else {
                return Ok(i);
            };
            if list {
                ffi::PyList_SET_ITEM(obj, i as ffi::Py_ssize_t, c);
            } else {
                ffi::PyTuple_SET_ITEM(obj, i as ffi::Py_ssize_t, c);
            }
            self.spend()?;
        }
        Ok(seq.len)
    }

    /// Index into `self.keys` of the key objects of `dict`'s shape (all
    /// its keys: an ID_DICT's key table is made once for all its dicts).
    unsafe fn keys_of(&mut self, dict: Dict) -> PyResult<usize> {
        if let Some(&k) = self.shape_keys.get(&dict.shape.start) {
            return Ok(k);
        }
        let at = self.keys.len();
        for i in 0..dict.shape.len {
            match self.shape_key(dict, i) {
                Ok(p) => self.keys.push(p),
                Err(e) => {
                    for p in self.keys.drain(at..) {
                        ffi::Py_DecRef(p);
                    }
                    return Err(e);
                }
            }
        }
        self.shape_keys.insert(dict.shape.start, at);
        Ok(at)
    }

    /// A new plain dict for the `len` keys `keys_of` put at `keys`: empty,
    /// or with more than `NEW_DICT_ROOM` keys, past the first
    /// `TEMPLATE_AFTER` dicts of their shape, a copy of a dict of those
    /// keys to None, whose values the caller replaces. Its table is then
    /// made at its final size, at once (`PyDict_Copy` copies it whole),
    /// rather than grown three times for 39 keys: `free_keys_object` was a
    /// fifth of thawing a table of such records. Keys that are equal
    /// collapse into one either way, as `PyDict_SetItem` makes them.
    #[inline(always)]
    unsafe fn new_dict(&mut self, keys: usize, len: usize) -> PyResult<*mut PyObject> {
        if len <= NEW_DICT_ROOM {
            return Ok(owned(self.py, ffi::PyDict_New())?.into_ptr());
        }
        self.new_wide_dict(keys, len)
    }

    /// `new_dict` for more than `NEW_DICT_ROOM` keys, out of line: the
    /// common small dict pays only the test of its length.
    #[inline(never)]
    unsafe fn new_wide_dict(&mut self, keys: usize, len: usize) -> PyResult<*mut PyObject> {
        let made = self.templates.entry(keys).or_insert((0, std::ptr::null_mut()));
        let template = if !made.1.is_null() {
            made.1
        } else if made.0 < TEMPLATE_AFTER {
            // The first dicts of a shape are made empty: a shape met a few
            // times (github's events: 24 shapes in 180 dicts) paid for its
            // dict of keys and gained nothing (61 to 64-65 µs).
            made.0 += 1;
            return Ok(owned(self.py, ffi::PyDict_New())?.into_ptr());
        } else {
            let t = owned(self.py, ffi::PyDict_New())?;
            for &key in &self.keys[keys..keys + len] {
                if ffi::PyDict_SetItem(t.as_ptr(), key, ffi::Py_None()) != 0 {
                    return Err(PyErr::fetch(self.py));
                }
            }
            let t = t.into_ptr();
            self.templates.insert(keys, (TEMPLATE_AFTER, t));
            t
        };
        Ok(owned(self.py, ffi::PyDict_Copy(template))?.into_ptr())
    }

    /// Key `i` of `dict`'s shape, a new reference. A key string this thaw
    /// made already is answered from the memo before its slot is decoded
    /// into a `Value` (dicts that each have a shape of their own over a
    /// few key names: the decode was most of `keys_of`).
    #[inline]
    unsafe fn shape_key(&mut self, dict: Dict, i: usize) -> PyResult<*mut PyObject> {
        self.spend()?;
        let slot = self.r.word(dict.shape.pos + 8 * i).map_err(format_error)?;
        if let Some(p) = self.str_made(slot, dict.shape.start)? {
            return Ok(p);
        }
        match self.r.decode(slot, dict.shape.start).map_err(format_error)? {
            // A set is a value, never a key (as an element, `key` refuses it).
            Value::Set(_) => Err(malformed("a dict key is a set (unhashable)")),
            k => self.key(k, 0),
        }
    }

    /// A hashable value (key or set element), built recursively: keys are shallow.
    unsafe fn key(&mut self, v: Value<'a>, depth: usize) -> PyResult<*mut PyObject> {
        if depth > MAX_KEY_DEPTH {
            return Err(malformed(&format!("key nested too deeply (limit {MAX_KEY_DEPTH})")));
        }
        // Typed values that are not keys (arrays, decimals, aware times)
        // may still stand here in unverified bytes.
        if let Value::Ext(e) = &v {
            if !bale_core::typed::hashable_ext(e) {
                return Err(malformed(&format!(
                    "a dict key or set element is a {}, which is not stored as a key",
                    bale_core::typed::class_name(e)
                )));
            }
        }
        // A shape's keys through the string memo: dicts of many shapes
        // over few key names share the key objects (and their cached hashes).
        if let Value::Str(s) = &v {
            let (at, shape) = match (s.stored_at(), s.inline_slot()) {
                (Some((at, len)), _) => (at, len << 2 | s.width as usize),
                // Keyed by the slot word, with a shape no stored string has.
                (None, Some(slot)) => (slot as usize, usize::MAX),
                (None, None) => unreachable!("a string is stored or inline"),
            };
            let py = self.py;
            return self.strs.get(at, shape, || crate::convert::make_str(py, s));
        }
        if let Some(p) = scalar(self.py, &v) {
            return p;
        }
        match v {
            Value::Tuple(seq) => {
                let obj = owned(self.py, ffi::PyTuple_New(seq.len as ffi::Py_ssize_t))?;
                for i in 0..seq.len {
                    self.spend()?;
                    let e = self.r.seq_item(seq, i).map_err(format_error)?;
                    let p = self.key(e, depth + 1)?;
                    ffi::PyTuple_SET_ITEM(obj.as_ptr(), i as ffi::Py_ssize_t, p);
                }
                Ok(obj.into_ptr())
            }
            // A set is a value, never a key or an element (depth 0 is a set value).
            Value::Set(_) if depth > 0 => Err(malformed("a dict key or set element is a set (unhashable)")),
            Value::Set(t) | Value::FrozenSet(t) => {
                let frozen = matches!(v, Value::FrozenSet(_));
                let raw = if frozen {
                    ffi::PyFrozenSet_New(std::ptr::null_mut())
                } else {
                    ffi::PySet_New(std::ptr::null_mut())
                };
                let obj = owned(self.py, raw)?;
                for i in 0..t.len {
                    self.spend()?;
                    let e = self.r.table_item(t, i).map_err(format_error)?;
                    let p = owned(self.py, self.key(e, depth + 1)?)?;
                    if ffi::PySet_Add(obj.as_ptr(), p.as_ptr()) != 0 {
                        return Err(PyErr::fetch(self.py));
                    }
                }
                Ok(obj.into_ptr())
            }
            _ => Err(malformed("a dict key or set element is a list, dict or set (unhashable)")),
        }
    }
}

/// A container's identity: kind, where it starts, and its length (two
/// headerless slots may share a payload with different lengths).
pub type ContainerKey = (u8, usize, usize);

/// Identifies a container; scalars get the key `NOT_A_CONTAINER`.
pub fn container_key(v: &Value<'_>) -> ContainerKey {
    // Rows and list-column slices have no place of their own (and rows
    // share their table's start): none is a container met again.
    if is_slice(v) || matches!(v, Value::Dict(d) if d.row.is_some()) {
        return NOT_A_CONTAINER;
    }
    match *v {
        // Empty LIST/TUPLE slots have no place: each is a container of its own.
        Value::List(s) | Value::Tuple(s) if s.start == 0 => NOT_A_CONTAINER,
        Value::List(s) => (1, s.start, s.len),
        Value::Tuple(s) => (2, s.start, s.len),
        Value::Set(t) => (3, t.start, t.len),
        Value::FrozenSet(t) => (4, t.start, t.len),
        Value::Dict(d) => (5, d.start, d.len),
        Value::NumList(l) => (6, l.start, l.len),
        Value::Record(r) => (7, r.start, r.len),
        Value::Column(c) => (8, c.start, c.len),
        _ => NOT_A_CONTAINER,
    }
}

pub const NOT_A_CONTAINER: ContainerKey = (0, 0, 0);
