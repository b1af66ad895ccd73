//! Lists of records written by column (TABLE, STR_COLUMN, LIST_COLUMN).
//!
//! A list of dicts that all have the same keys, in the same order, and
//! whose values are scalars or lists of scalars (the shape of JSON records,
//! CSV rows and most datasets) is written as one column per key. A record
//! then costs no dict header and no slot in the list; ints and floats are
//! raw numbers, distinct strings are one run of code units, and lists are
//! cut from one child list by offsets. Anything else (nested dicts, other
//! types, views) is written row by row as before, so the rules of the
//! general path (cycles, paths in errors, sharing) never meet a table.

use std::ptr::addr_of_mut;

use bale_core::format::{make_int_slot, Width, SLOT_EMPTY_LIST, SLOT_FALSE, SLOT_NONE, SLOT_TRUE};
use bale_core::writer::StrCodes;
use pyo3::ffi::{self, PyObject};
use pyo3::prelude::*;

use crate::compactor::{prefetch, Compactor, SHARED_STR_AHEAD};
use crate::ffi::pydict;
use crate::ffi::pylist;
use crate::ffi::pylong::int_value;
use crate::ffi::pytuple;
use crate::ffi::pyunicode::str_units;

use bale_core::layout::{
    str_column_fits, str_column_is_smaller, str_slot_bytes, ColumnSlack, TABLE_MAX_KEYS, TABLE_MAX_NESTING,
};

/// What the scalars met so far in a column (or in its lists) have in
/// common, with their data gathered in the same pass: the objects are
/// read once, while they are in cache.
enum Run {
    Empty,
    Ints(Vec<u64>),
    Floats(Vec<u64>),
    /// Strings of one width: their units, offsets in units, and the bytes
    /// they would take as slots.
    Strs {
        width: Width,
        units: Vec<u8>,
        offsets: Vec<u32>,
        as_slots: usize,
    },
    /// Strings of one width that looked bound for slots after the first
    /// `SLOTS_PROBE` (most held elsewhere, so stored once each): only
    /// counted, not copied. `units` is in bytes.
    CountedStrs {
        width: Width,
        count: usize,
        units: usize,
        as_slots: usize,
    },
    /// None, True, False among ints that fit a slot (flags, optional
    /// counts): their slots, which hold them whole, as the general path
    /// writes them. Written at once, without reading the cells again.
    Slots(Vec<u64>),
    /// Anything else: written as slots.
    Mixed,
}

impl Run {
    /// Adds one scalar; false when `obj` is no scalar. `hint`: the number
    /// of scalars expected (the vectors are made that large at once).
    #[inline(always)]
    unsafe fn add(&mut self, obj: *mut PyObject, hint: usize) -> bool {
        let tp = ffi::Py_TYPE(obj);
        if tp == addr_of_mut!(ffi::PyUnicode_Type) {
            let (w, u) = str_units(obj);
            if let Run::Empty = self {
                let mut offsets = Vec::with_capacity(hint + 1);
                offsets.push(0);
                let mut units = crate::spare_buffer::take_scratch();
                units.reserve(hint * 16);
                *self = Run::Strs { width: w, units, offsets, as_slots: 0 };
            }
            match self {
                // Offsets are u32: a run of more code units is written as slots.
                Run::Strs { width, units, offsets, as_slots }
                    if *width == w && str_column_fits(w, units.len() + u.len()) =>
                {
                    append_units(units, u);
                    offsets.push((units.len() / w.unit()) as u32);
                    *as_slots += slot_bytes(obj, w, u);
                    let count = offsets.len() - 1;
                    if count == SLOTS_PROBE && *as_slots < 4 * count + units.len() {
                        *self = Run::CountedStrs { width: w, count, units: units.len(), as_slots: *as_slots };
                    }
                }
                Run::CountedStrs { width, count, units, as_slots }
                    if *width == w && str_column_fits(w, *units + u.len()) =>
                {
                    *count += 1;
                    *units += u.len();
                    *as_slots += slot_bytes(obj, w, u);
                }
                _ => *self = Run::Mixed,
            }
            return true;
        }
        if tp == addr_of_mut!(ffi::PyLong_Type) {
            let v = int_value(obj);
            if let Run::Empty = self {
                *self = Run::Ints(Vec::with_capacity(hint));
            }
            match (self, v) {
                (Run::Ints(words), Some(v)) => words.push(v as u64),
                (Run::Slots(slots), Some(v)) if make_int_slot(v).is_some() => slots.extend(make_int_slot(v)),
                (Run::Mixed, _) => {}
                (run, _) => *run = Run::Mixed,
            }
            return true;
        }
        if tp == addr_of_mut!(ffi::PyFloat_Type) {
            if let Run::Empty = self {
                *self = Run::Floats(Vec::with_capacity(hint));
            }
            match self {
                Run::Floats(words) => words.push(crate::ffi::pyfloat::value(obj).to_bits()),
                Run::Mixed => {}
                _ => *self = Run::Mixed,
            }
            return true;
        }
        let slot = if obj == ffi::Py_None() {
            SLOT_NONE
        } else if obj == ffi::Py_True() {
            SLOT_TRUE
        } else if obj == ffi::Py_False() {
            SLOT_FALSE
        } else {
            return false;
        };
        match self {
            Run::Empty => *self = Run::Slots(Vec::with_capacity(hint)),
            Run::Ints(words) => {
                let slots: Option<Vec<u64>> = words.iter().map(|&v| make_int_slot(v as i64)).collect();
                *self = slots.map_or(Run::Mixed, Run::Slots);
            }
            _ => {}
        }
        match self {
            Run::Slots(slots) => slots.push(slot),
            _ => *self = Run::Mixed,
        }
        true
    }
}

/// Appends a string's units; those of 4 to 32 bytes (codes, ids, URLs)
/// with two copies of a power of two bytes that may overlap, rather than a
/// call to memcpy.
#[inline(always)]
unsafe fn append_units(units: &mut Vec<u8>, u: &[u8]) {
    let n = u.len();
    if !(4..=32).contains(&n) {
        units.extend_from_slice(u);
        return;
    }
    units.reserve(n);
    let dst = units.as_mut_ptr().add(units.len());
    let src = u.as_ptr();
    let half = if n >= 16 {
        16
    } else if n >= 8 {
        8
    } else {
        4
    };
    std::ptr::copy_nonoverlapping(src, dst, half);
    std::ptr::copy_nonoverlapping(src.add(n - half), dst.add(n - half), half);
    units.set_len(units.len() + n);
}

/// The bytes a string takes as a slot (`layout::str_slot_bytes`): a string
/// with one reference is held by nothing else.
#[inline(always)]
unsafe fn slot_bytes(obj: *mut PyObject, w: Width, units: &[u8]) -> usize {
    str_slot_bytes(w, units.len(), ffi::Py_REFCNT(obj) == 1)
}

// Note [Prefetched places of shared strings]
// A string held more than once is looked up by address in the compactor's
// map of shared strings (`AddressMap`), so that it is stored once. Data
// whose strings are also held elsewhere (an index, a second list of the
// same values) sends every string there, and a map of 400,000 of them is
// far out of cache: with `hashbrown` each lookup waited for its bucket's
// line, and the map doubled its way up, moving every key at each step
// (half of compacting such records, `benchmarks/sweep_profiles.md`).
// Two things now overlap or avoid those waits:
// * Places loaded ahead. A table's string column knows its strings before
//   writing them: the string `SHARED_STR_AHEAD` rows ahead, its entry in
//   the column's `SlotMemo` and its place in the map are loaded while
//   this one is written. A list's run of leaves (`leaf_run`) loads the
//   place of the element that far ahead once the map is larger than the
//   caches (`AddressMap::is_large`). The address alone gives the place,
//   so a leaf that is no shared string costs a wasted prefetch.
// * Growth towards what is coming. A table, once its rows are gathered,
//   announces the strings its columns will write as slots
//   (`Gather::strings_as_slots`, `Compactor::strings_ahead`, counted down
//   as they are written), and the innermost open list or dict has its
//   elements left: a map that must grow grows towards room for those, 32
//   times its size at most at once, since most of a column of repeated
//   words is met again rather than new.

/// Strings seen before a run decides whether to keep copying their units.
const SLOTS_PROBE: usize = 1024;

/// Slots of the strings of one column, by address, in a direct-mapped
/// table. A column goes to slots when most of its strings repeat (tags,
/// categories); the table answers for those without reading the string
/// again or hashing into the compactor's string cache. An address keeps
/// its slot, and its code in a table's own column (`StrCodes`): the rows
/// hold the strings throughout.
struct SlotMemo {
    entries: Vec<(usize, u64, u32)>,
    bits: u32,
}

/// The most entries of a `SlotMemo` (512 KiB): enough that a few thousand
/// distinct strings seldom share one.
const SLOT_MEMO_MAX_BITS: u32 = 15;

impl SlotMemo {
    /// A table for a column of `count` strings: about as many entries.
    fn new(count: usize) -> SlotMemo {
        let bits = count.next_power_of_two().trailing_zeros().clamp(4, SLOT_MEMO_MAX_BITS);
        SlotMemo { entries: vec![(0, 0, 0); 1 << bits], bits }
    }

    #[inline(always)]
    fn place(&self, obj: *mut PyObject) -> usize {
        bale_core::hash::place_of(obj as usize as u64, self.bits)
    }

    /// Starts loading the entry `obj` would have.
    #[inline(always)]
    fn prefetch(&self, obj: *mut PyObject) {
        prefetch(&self.entries[self.place(obj)] as *const (usize, u64, u32) as *mut PyObject);
    }

    /// The slot of `obj` (made by `make` when not kept) and its code (`code`
    /// of the slot, when made).
    #[inline(always)]
    fn slot(
        &mut self,
        obj: *mut PyObject,
        make: impl FnOnce(*mut PyObject) -> u64,
        code: impl FnOnce(u64) -> u32,
    ) -> (u64, u32) {
        let at = self.place(obj);
        let entry = &mut self.entries[at];
        if entry.0 != obj as usize {
            let slot = make(obj);
            *entry = (obj as usize, slot, code(slot));
        }
        (entry.1, entry.2)
    }
}

/// One column being gathered, a cell at a time. Numbers, and strings
/// written as a STR_COLUMN, need only their run; the cells (or for lists
/// their items) are kept only once the column may be written as slots.
struct Gather {
    /// Every cell is a list (else every cell is a scalar; both: `mixed`).
    lists: bool,
    mixed: bool,
    /// With `lists`: the lists' items are dicts, the rows of a table under
    /// a ROWS_COLUMN (`child`, once the column is gathered), kept in `items`.
    of_rows: bool,
    /// Every cell is a dict, a row of the table that is the column
    /// (`child`), kept in `items`.
    of_dicts: bool,
    child: Option<Box<ChildTable>>,
    /// With `keep_cells`: the cells (for columns of strings or mixed cells).
    cells: Vec<*mut PyObject>,
    keep_cells: bool,
    /// With `keep_items` (or `of_rows`): the items of the list cells.
    items: Vec<*mut PyObject>,
    keep_items: bool,
    run: Run,
    /// With `lists`: item offsets of the cells.
    offsets: Vec<u32>,
    /// The number of rows.
    rows: usize,
    /// Scalars expected (the number of rows; twice that for lists).
    hint: usize,
}

/// The table of the dicts of a column of dicts or of lists of dicts,
/// gathered: its rows are the column's `items`.
struct ChildTable {
    keys: Vec<*mut PyObject>,
    columns: Vec<Gather>,
    /// What its bytes leave of the readers' budget (`layout::table_slack`).
    slack: i64,
}

/// Rows whose dict and entries are loaded ahead of the row being read.
const DICT_AHEAD: usize = 16;
const ENTRIES_AHEAD: usize = 12;
/// Rows whose (key, value) pairs are loaded ahead, all their lines: a
/// record of 40 keys has them on 10 lines (a miss on each, 7% of
/// gathering a table of 40 columns of booleans).
const PAIRS_AHEAD: usize = 6;
/// Rows (of a block's column) whose list cells' item arrays, then first
/// items, are loaded ahead of the cell being gathered.
const ITEM_ARRAYS_AHEAD: usize = 4;
const ITEMS_AHEAD: usize = 2;

/// Cells of a column written as slots whose objects are loaded ahead of
/// the one being written (`Compactor::slot_column`).
const SLOT_COLUMN_AHEAD: usize = 16;

/// The values a block of rows holds at most (`block_rows`).
const BLOCK_VALUES: usize = 512;

/// The rows gathered at once by a table of `k` keys. Their values are read
/// row by row, then each column gathers its cells of the block in turn, so
/// that its writes (units, offsets, cells) go to one stream at a time. Cell
/// by cell across the row, as before, a table of 40 string columns wrote
/// to 80 streams at once: each cell waited on a store to a line not in
/// cache (40 columns of 60-character strings: 11 ms against the row path's
/// 3). The block's values, loaded while its rows were read, stay in cache
/// until its columns are done: `BLOCK_VALUES` objects, 64 KiB of their
/// first two lines.
fn block_rows(k: usize) -> usize {
    (BLOCK_VALUES / k).clamp(8, 256)
}

impl Gather {
    fn new(rows: usize) -> Gather {
        Gather {
            lists: false,
            mixed: false,
            of_rows: false,
            of_dicts: false,
            child: None,
            cells: Vec::new(),
            keep_cells: false,
            items: Vec::new(),
            keep_items: false,
            run: Run::Empty,
            // Made when the first cell is a list (most columns hold scalars).
            offsets: Vec::new(),
            rows,
            hint: rows,
        }
    }

    /// How many scalars: the items of the list cells, or the cells.
    fn scalar_count(&self) -> usize {
        if self.lists {
            *self.offsets.last().unwrap() as usize
        } else {
            self.rows
        }
    }

    /// Calls `f` on each scalar in order: the items of the list cells, or
    /// the cells. Items not kept are read again from the rows (column
    /// `j`), which no Python code has changed since they were gathered.
    unsafe fn for_each_scalar(&self, rows: *mut *mut PyObject, j: usize, mut f: impl FnMut(*mut PyObject)) {
        if !self.lists {
            self.cells.iter().for_each(|&c| f(c));
        } else if self.keep_items {
            self.items.iter().for_each(|&c| f(c));
        } else {
            for r in 0..self.rows {
                if r + DICT_AHEAD < self.rows {
                    prefetch(*rows.add(r + DICT_AHEAD));
                }
                pylist::items(cell_at(*rows.add(r), j)).iter().for_each(|&c| f(c));
            }
        }
    }

    /// The scalars in one array (for the rare columns written item by item
    /// as general values).
    unsafe fn collect_scalars(&self, rows: *mut *mut PyObject, j: usize) -> Vec<*mut PyObject> {
        let mut all = Vec::with_capacity(self.scalar_count());
        self.for_each_scalar(rows, j, |s| all.push(s));
        all
    }

    /// How many strings this column will write as slots (each looked up in
    /// the compactor's map of shared strings when it has other references):
    /// the choice `Compactor::scalars` makes.
    fn strings_as_slots(&self) -> usize {
        if let Some(child) = &self.child {
            return child.columns.iter().map(Gather::strings_as_slots).sum();
        }
        let count = self.scalar_count();
        let as_column = match &self.run {
            _ if self.mixed || count == 0 => return 0,
            Run::Strs { units, as_slots, .. } => str_column_is_smaller(count, units.len(), *as_slots),
            Run::CountedStrs { units, as_slots, .. } => str_column_is_smaller(count, *units, *as_slots),
            _ => return 0,
        };
        if as_column {
            0
        } else {
            count
        }
    }

    /// About the bytes this column will take (strings held elsewhere aside).
    fn size_hint(&self) -> usize {
        // The items: a table of the dicts, or the scalars.
        let items = match (&self.child, &self.run) {
            (Some(child), _) => 16 + 8 * child.keys.len() + child.columns.iter().map(Gather::size_hint).sum::<usize>(),
            (None, Run::Strs { units, offsets, .. }) => 16 + 4 * offsets.len() + units.len(),
            _ => 16 + 8 * self.scalar_count(),
        };
        items + if self.lists { 16 + 4 * self.offsets.len() } else { 0 }
    }

    /// Adds the cell of row `i` (column `j` of `rows`); false when it is no
    /// cell (a scalar, a list of scalars; in a column whose first cell is a
    /// dict, an exact dict; in a column of lists whose first item is a
    /// dict, a list of exact dicts).
    #[inline(always)]
    unsafe fn add(&mut self, obj: *mut PyObject, i: usize, rows: *mut *mut PyObject, j: usize) -> bool {
        let list = ffi::Py_TYPE(obj) == addr_of_mut!(ffi::PyList_Type);
        if i == 0 {
            self.lists = list;
            if !list && ffi::Py_TYPE(obj) == addr_of_mut!(ffi::PyDict_Type) {
                self.of_dicts = true;
            }
            if list {
                self.hint *= 2;
                self.offsets.reserve(self.rows + 1);
                self.offsets.push(0);
            }
        } else if list != self.lists {
            // A scalar among lists of dicts: no column holds both.
            if self.of_rows {
                return false;
            }
            self.mixed = true;
        }
        if self.of_rows | self.of_dicts {
            return self.add_nested(obj);
        }
        if self.keep_cells {
            self.cells.push(obj);
        }
        if !list {
            if !self.run.add(obj, self.hint) {
                return false;
            }
        } else {
            let items = pylist::items(obj);
            for &item in items {
                if !self.run.add(item, self.hint) {
                    // The first item of the column a dict: its lists are
                    // rows of a table.
                    let first = matches!(self.run, Run::Empty) && !self.mixed;
                    return first && ffi::Py_TYPE(item) == addr_of_mut!(ffi::PyDict_Type) && {
                        self.of_rows = true;
                        self.items.reserve(self.hint);
                        self.add_rows(obj)
                    };
                }
            }
            if self.keep_items {
                self.items.extend_from_slice(items);
            }
            // (No offsets yet: a list in a column of scalars, now mixed.)
            let total = self.offsets.last().map_or(0, |&o| o as usize) + items.len();
            self.offsets.push(total as u32);
            if total > u32::MAX as usize {
                return false;
            }
        }
        let numbers = matches!(self.run, Run::Ints(_) | Run::Floats(_) | Run::Slots(_));
        if !self.keep_cells && (self.mixed || !(self.lists || numbers)) {
            self.keep_cells = true;
            self.cells.reserve_exact(self.rows);
            self.cells.extend((0..=i).map(|r| cell_at(*rows.add(r), j)));
        }
        if self.lists && !self.keep_items && !self.mixed && matches!(self.run, Run::CountedStrs { .. } | Run::Mixed) {
            self.keep_items = true;
            self.items.reserve(self.hint);
            for r in 0..=i {
                self.items.extend_from_slice(pylist::items(cell_at(*rows.add(r), j)));
            }
        }
        true
    }

    /// Whether `obj` may be a row of this column's table: an exact dict of
    /// as many keys as the first (dicts whose keys vary, github's payloads,
    /// are found here, not once the whole outer table is gathered).
    #[inline(always)]
    unsafe fn may_be_row(&self, obj: *mut PyObject) -> bool {
        ffi::Py_TYPE(obj) == addr_of_mut!(ffi::PyDict_Type)
            && self.items.first().is_none_or(|&first| pydict::len(first) == pydict::len(obj))
    }

    /// Adds a cell of a column of dicts or of lists of dicts: false unless
    /// it is an exact dict, or a list of them (their keys and values are
    /// checked when the column's table is gathered).
    #[inline(never)]
    unsafe fn add_nested(&mut self, obj: *mut PyObject) -> bool {
        if self.of_rows {
            return self.add_rows(obj);
        }
        if !self.may_be_row(obj) {
            return false;
        }
        self.items.push(obj);
        true
    }

    unsafe fn add_rows(&mut self, list: *mut PyObject) -> bool {
        let items = pylist::items(list);
        if !items.iter().all(|&item| self.may_be_row(item)) {
            return false;
        }
        self.items.extend_from_slice(items);
        let total = self.items.len();
        self.offsets.push(total as u32);
        total <= u32::MAX as usize
    }
}

/// The value of the `j`th entry of a dict with more than `j` entries.
unsafe fn cell_at(row: *mut PyObject, j: usize) -> *mut PyObject {
    pydict::items(row).nth(j).map_or(std::ptr::null_mut(), |(_, value)| value)
}

/// Whether `obj` may be a cell a column gathers (`Gather::add`): a scalar
/// `Run::add` takes, a list of them, an exact dict or a list of them.
#[inline]
unsafe fn column_cell(obj: *mut PyObject) -> bool {
    if ffi::Py_TYPE(obj) == addr_of_mut!(ffi::PyDict_Type) {
        return true;
    }
    if ffi::Py_TYPE(obj) == addr_of_mut!(ffi::PyList_Type) {
        let items = pylist::items(obj);
        let dict_type = addr_of_mut!(ffi::PyDict_Type);
        return items.iter().all(|&item| column_scalar(item))
            || items.iter().all(|&item| ffi::Py_TYPE(item) == dict_type);
    }
    column_scalar(obj)
}

/// Whether `Run::add` takes `obj` (its first test, kept beside it).
#[inline(always)]
unsafe fn column_scalar(obj: *mut PyObject) -> bool {
    let tp = ffi::Py_TYPE(obj);
    tp == addr_of_mut!(ffi::PyUnicode_Type)
        || tp == addr_of_mut!(ffi::PyLong_Type)
        || tp == addr_of_mut!(ffi::PyFloat_Type)
        || obj == ffi::Py_None()
        || obj == ffi::Py_True()
        || obj == ffi::Py_False()
}

/// Reads row `i` into `values` when it is a dict of `keys`, in order.
#[inline(always)]
unsafe fn read_row(row: *mut PyObject, keys: &[*mut PyObject], values: &mut [*mut PyObject]) -> bool {
    if ffi::Py_TYPE(row) != addr_of_mut!(ffi::PyDict_Type) || pydict::len(row) != keys.len() {
        return false;
    }
    if let Some(pairs) = pydict::pairs(row, keys.len()) {
        for (j, &[key, value]) in pairs.iter().enumerate() {
            if !same_key(key, keys[j]) {
                return false;
            }
            values[j] = value;
        }
        return true;
    }
    for (j, (key, value)) in pydict::items(row).enumerate() {
        if !same_key(key, keys[j]) {
            return false;
        }
        values[j] = value;
    }
    true
}

/// Room smaller than this is left to fault in page by page.
const MIN_POPULATED: usize = 1 << 20;

/// Maps in the pages of `[ptr, ptr + len)`, memory about to be written, in
/// one call rather than one page fault per 4 KiB. Advice only: where the
/// kernel lacks it (before Linux 5.14), the pages fault in as they are
/// written.
fn populate(ptr: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        if len < MIN_POPULATED {
            return;
        }
        let start = (ptr as usize).next_multiple_of(PAGE);
        let end = (ptr as usize + len) & !(PAGE - 1);
        if end > start {
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_POPULATE_WRITE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

/// Whether two dict keys are the same key: the same object, or two str
/// objects with the same content (records parsed one by one do not share
/// their key objects).
#[inline(always)]
unsafe fn same_key(a: *mut PyObject, b: *mut PyObject) -> bool {
    a == b || same_str_key(a, b)
}

/// The rare half of `same_key`: distinct objects, compared by content.
#[inline(never)]
unsafe fn same_str_key(a: *mut PyObject, b: *mut PyObject) -> bool {
    let str_type = addr_of_mut!(ffi::PyUnicode_Type);
    if ffi::Py_TYPE(a) != str_type || ffi::Py_TYPE(b) != str_type {
        return false;
    }
    let (wa, ua) = str_units(a);
    let (wb, ub) = str_units(b);
    wa == wb && ua == ub
}

impl<'py> Compactor<'py> {
    /// Writes `rows` as a TABLE when they are dicts of one key sequence
    /// whose values are all cells; `None`, having written nothing, otherwise.
    pub(crate) unsafe fn table(&mut self, rows: *mut *mut PyObject, n: usize) -> PyResult<Option<u64>> {
        let dict_type = addr_of_mut!(ffi::PyDict_Type);
        let first = *rows;
        if ffi::Py_TYPE(first) != dict_type {
            return Ok(None);
        }
        let k = pydict::len(first);
        if k == 0 || k > TABLE_MAX_KEYS || n > u32::MAX as usize {
            return Ok(None);
        }
        // A first row with a value no column holds (a nested dict, a list
        // of dicts: github's events, citm's performances) would fail the
        // gathering below at its first row, after its vectors were made and
        // eight rows read ahead (2-3% of compacting the github and citm
        // corpora): it is found before anything is made.
        if !pydict::items(first).all(|(_, value)| column_cell(value)) {
            return Ok(None);
        }
        // The cells gathered below are borrowed: storing the keys must run
        // no Python code (see `Note [Python code during compaction]`).
        if !pydict::items(first).all(|(key, _)| key_runs_no_python(key)) {
            return Ok(None);
        }
        // The keys and the block of values of the last table, reused: most
        // tables of nested records are small (citm: 1,270 lists of 2-9
        // dicts), and each allocation and free was a share of their cost. A
        // table nested in a column takes them empty and makes its own.
        let mut keys = std::mem::take(&mut self.table_keys);
        let mut values_of_block = std::mem::take(&mut self.table_block);
        keys.clear();
        keys.extend(pydict::items(first).map(|(key, _)| key));
        values_of_block.clear();
        values_of_block.resize(block_rows(k).min(n) * k, std::ptr::null_mut());
        let out = self.table_of(rows, n, &keys, &mut values_of_block);
        self.table_keys = keys;
        self.table_block = values_of_block;
        out
    }

    /// `table` once its keys are known (`keys`, the first row's), with room
    /// for the values of a block of rows (`values_of_block`, `block_rows`).
    unsafe fn table_of(
        &mut self,
        rows: *mut *mut PyObject,
        n: usize,
        keys: &[*mut PyObject],
        values_of_block: &mut [*mut PyObject],
    ) -> PyResult<Option<u64>> {
        // The whole tree of tables is gathered before a byte is written,
        // so that a refusal anywhere in it writes nothing.
        let Some(columns) = gather_rows(rows, n, keys, values_of_block, 0) else {
            return Ok(None);
        };
        // The shape comes from the first row's keys, as for a dict. A key
        // bale cannot store: the row path fails on it too, with the path of
        // the first row in its message.
        let Ok(shape) = self.table_shape(keys) else {
            return Ok(None);
        };
        self.write_table(rows, n, shape, columns).map(Some)
    }

    /// The SHAPE of a table's keys, found again or written.
    unsafe fn table_shape(&mut self, keys: &[*mut PyObject]) -> PyResult<u64> {
        let items = self.items.len();
        self.key_ptrs.clear();
        for &key in keys {
            self.items.push((key, std::ptr::null_mut()));
            self.key_ptrs.push(key as usize);
        }
        let shape = self.shape_of(items, keys.len());
        self.truncate_items(items);
        shape
    }

    /// Writes a gathered table of `n` rows (`rows`) and the keys of
    /// `shape`: its columns, then the TABLE object.
    unsafe fn write_table(
        &mut self,
        rows: *mut *mut PyObject,
        n: usize,
        shape: u64,
        columns: Vec<Gather>,
    ) -> PyResult<u64> {
        let k = columns.len();
        // The columns' bytes at once, rather than by doubling the buffer,
        // and the TABLE object after them with a page to spare: one byte
        // short, the next write doubled the buffer (a 20 MB region then sat
        // in 40 MB, mapped afresh by every compaction: `spare_buffer.rs`).
        let size: usize = columns.iter().map(Gather::size_hint).sum();
        self.builder.reserve(size + 16 + 8 * k + 4096);
        let (room, spare) = self.builder.spare_room();
        populate(room, size.min(spare));
        // Note [Prefetched places of shared strings]
        let outer_strings_ahead = self.strings_ahead;
        self.strings_ahead += columns.iter().map(Gather::strings_as_slots).sum::<usize>();
        let cols = self.columns(columns, rows);
        self.strings_ahead = outer_strings_ahead;
        Ok(self.builder.table_object(n, shape, &cols?))
    }
}

/// Gathers the columns of the `n` dicts at `rows`, a table `level` tables
/// below the outermost, whose keys are `keys` (the first row's); `None`
/// when they are no table: a row of other keys, a value no column holds,
/// a column of lists of dicts that make no table.
unsafe fn gather_rows(
    rows: *mut *mut PyObject,
    n: usize,
    keys: &[*mut PyObject],
    values_of_block: &mut [*mut PyObject],
    level: usize,
) -> Option<Vec<Gather>> {
    let k = keys.len();
    let dict_type = addr_of_mut!(ffi::PyDict_Type);
    let mut columns: Vec<Gather> = (0..k).map(|_| Gather::new(n)).collect();
    let list_type = addr_of_mut!(ffi::PyList_Type);
    let block_len = values_of_block.len() / k;
    let mut start = 0;
    while start < n {
        let end = (start + block_len).min(n);
        // The block's rows, one after the other (the order their
        // objects were most likely made in): their values, loaded.
        for i in start..end {
            if i + DICT_AHEAD < n {
                prefetch(*rows.add(i + DICT_AHEAD));
            }
            if i + ENTRIES_AHEAD < n {
                let row = *rows.add(i + ENTRIES_AHEAD);
                if ffi::Py_TYPE(row) == dict_type {
                    pydict::prefetch_entries(row);
                }
            }
            if i + PAIRS_AHEAD < n {
                let row = *rows.add(i + PAIRS_AHEAD);
                if ffi::Py_TYPE(row) == dict_type {
                    pydict::prefetch_pairs(row, k);
                }
            }
            let values = &mut values_of_block[(i - start) * k..(i - start + 1) * k];
            if !read_row(*rows.add(i), keys, values) {
                return None;
            }
            // And their second lines: a string's state and units
            // straddle the first line's end in most of CPython's size
            // classes (40 columns of 60-character strings: 10.5 to
            // 7.7 ms).
            values.iter().for_each(|&v| {
                prefetch(v);
                prefetch((v as *mut u8).wrapping_add(64) as *mut PyObject);
            });
        }
        // Then each column gathers its cells of the block.
        let held = &values_of_block[..(end - start) * k];
        for (j, column) in columns.iter_mut().enumerate() {
            let cell = |i: usize| held[(i - start) * k + j];
            for i in start..end {
                // (Only a column whose first cell was a list holds
                // lists: another is mixed if it has any, written as
                // slots.)
                let lists = column.lists;
                if lists && i + ITEM_ARRAYS_AHEAD < end {
                    let v = cell(i + ITEM_ARRAYS_AHEAD);
                    if ffi::Py_TYPE(v) == list_type {
                        prefetch(pylist::items_ptr(v) as *mut PyObject);
                    }
                }
                if lists && i + ITEMS_AHEAD < end {
                    let v = cell(i + ITEMS_AHEAD);
                    if ffi::Py_TYPE(v) == list_type {
                        pylist::items(v).iter().take(4).for_each(|&item| prefetch(item));
                    }
                }
                if !column.add(cell(i), i, rows, j) {
                    return None;
                }
            }
        }
        start = end;
    }
    // Then the tables of the columns of dicts or of lists of dicts, in key
    // order, and what the tree's bytes leave of the readers' budget.
    for column in columns.iter_mut().filter(|g| g.of_rows | g.of_dicts) {
        column.child = Some(Box::new(gather_child(&mut column.items, level + 1)?));
    }
    (table_slack(&columns, n) >= 0).then_some(columns)
}

/// `bale_core::layout::table_slack` of gathered columns.
fn table_slack(columns: &[Gather], n: usize) -> i64 {
    let column = |g: &Gather| match &g.child {
        Some(child) if g.of_dicts => ColumnSlack::Table { slack: child.slack },
        Some(child) => ColumnSlack::Rows { lists: n, slack: child.slack },
        None if g.lists && !g.mixed => ColumnSlack::Lists { lists: n, items: g.scalar_count() },
        None => ColumnSlack::Scalars { cells: n },
    };
    bale_core::layout::table_slack(n, columns.iter().map(column))
}

/// Gathers the table of `rows` (the dicts of a column of lists of dicts),
/// `level` tables below the outermost: `None` when they are no table, or
/// lie too deep (`TABLE_MAX_NESTING`).
#[inline(never)]
unsafe fn gather_child(rows: &mut [*mut PyObject], level: usize) -> Option<ChildTable> {
    let first = rows[0];
    let k = pydict::len(first);
    if level > TABLE_MAX_NESTING || k == 0 || k > TABLE_MAX_KEYS {
        return None;
    }
    // The keys of the outermost table's first row were checked by `table`.
    if !pydict::items(first).all(|(key, _)| key_runs_no_python(key)) {
        return None;
    }
    let keys: Vec<*mut PyObject> = pydict::items(first).map(|(key, _)| key).collect();
    let mut values_of_block = vec![std::ptr::null_mut(); block_rows(k).min(rows.len()) * k];
    let columns = gather_rows(rows.as_mut_ptr(), rows.len(), &keys, &mut values_of_block, level)?;
    let slack = table_slack(&columns, rows.len());
    Some(ChildTable { keys, columns, slack })
}

impl<'py> Compactor<'py> {
    /// Writes the gathered columns in order: their slots. A loop, not a
    /// `collect` into a `PyResult<Vec>`, which made the vector without its
    /// capacity and kept `column` out of line (`try_process`, 4% of
    /// compacting citm).
    #[inline(always)]
    unsafe fn columns(&mut self, columns: Vec<Gather>, rows: *mut *mut PyObject) -> PyResult<Vec<u64>> {
        let mut cols = Vec::with_capacity(columns.len());
        for (j, column) in columns.into_iter().enumerate() {
            cols.push(self.column(column, rows, j)?);
        }
        Ok(cols)
    }

    /// Writes a gathered column: lists as a LIST_COLUMN over their items,
    /// scalars by what they have in common.
    unsafe fn column(&mut self, mut g: Gather, rows: *mut *mut PyObject, j: usize) -> PyResult<u64> {
        if let Some(child) = g.child.take() {
            // The table of the dicts (or the lists' dicts): its shape,
            // columns and TABLE object, then for lists the ROWS_COLUMN (the
            // JSON source writes the same bytes in the same order).
            let shape = self.table_shape(&child.keys)?;
            let table = self.write_table(g.items.as_mut_ptr(), g.items.len(), shape, child.columns)?;
            return Ok(if g.of_dicts { table } else { self.builder.rows_column(table, &g.offsets) });
        }
        if g.mixed {
            return self.slot_column(&g.cells, true);
        }
        if !g.lists {
            return self.scalars(&mut g, rows, j, true);
        }
        let child = if g.scalar_count() == 0 { SLOT_EMPTY_LIST } else { self.scalars(&mut g, rows, j, false)? };
        Ok(self.builder.list_column(child, &g.offsets))
    }

    /// Scalars: raw numbers (a table's own column of ints, `column`, as
    /// 32-bit ints when they all fit: the JSON source writes the same);
    /// strings as a STR_COLUMN when that is smaller than slots; else slots.
    unsafe fn scalars(&mut self, g: &mut Gather, rows: *mut *mut PyObject, j: usize, column: bool) -> PyResult<u64> {
        let count = g.scalar_count();
        match std::mem::replace(&mut g.run, Run::Mixed) {
            Run::Ints(words) if column => Ok(self.builder.int_column(&words)),
            Run::Ints(words) => Ok(self.builder.num_list(false, &words)),
            Run::Floats(words) => Ok(self.builder.num_list(true, &words)),
            Run::Slots(slots) if column => Ok(self.builder.slot_column(&slots)),
            Run::Slots(slots) => Ok(self.builder.seq(false, &slots)),
            Run::Strs { width, units, offsets, as_slots } if str_column_is_smaller(count, units.len(), as_slots) => {
                let column = self.builder.str_column(width, &offsets, &units);
                crate::spare_buffer::give_scratch(units);
                Ok(column)
            }
            // Counted only, yet a column after all: copied now.
            Run::CountedStrs { width, units, as_slots, .. } if str_column_is_smaller(count, units, as_slots) => {
                let mut bytes = Vec::with_capacity(units);
                let mut offsets = Vec::with_capacity(count + 1);
                offsets.push(0u32);
                g.for_each_scalar(rows, j, |s| {
                    bytes.extend_from_slice(str_units(s).1);
                    offsets.push((bytes.len() / width.unit()) as u32);
                });
                Ok(self.builder.str_column(width, &offsets, &bytes))
            }
            // Exact strs all (the run saw every item): straight to their slots.
            run @ (Run::Strs { .. } | Run::CountedStrs { .. }) => {
                // The offsets gathered for a STR_COLUMN are not needed: their
                // vector holds the codes.
                let spare = match run {
                    Run::Strs { offsets, .. } => Some(offsets),
                    _ => None,
                };
                // Each slot takes the place of its string (collected in place).
                let kept = if !g.lists {
                    Some(std::mem::take(&mut g.cells))
                } else if g.keep_items {
                    Some(std::mem::take(&mut g.items))
                } else {
                    None
                };
                let mut memo = SlotMemo::new(count);
                // A table's own column of repeated strings: a code a cell,
                // made as the slots are (a memo hit keeps its code again).
                let mut codes = StrCodes::new(if column && !g.lists { count } else { 0 }, spare.unwrap_or_default());
                let slots: Vec<u64> = match kept {
                    Some(strs) => {
                        // Made whole even while the cells are coded, when it
                        // is never written: freeing a block this large raises
                        // glibc's mmap threshold past the gathered vectors of
                        // the next columns, which without it were mapped and
                        // faulted in afresh each time (`perf`: 2.9 times the
                        // page faults, records over a 2,000-word vocabulary
                        // compacted 16% slower). Pages never written cost
                        // nothing.
                        let mut slots = Vec::with_capacity(strs.len());
                        for (i, &s) in strs.iter().enumerate() {
                            // Note [Prefetched places of shared strings]
                            if let Some(&ahead) = strs.get(i + SHARED_STR_AHEAD) {
                                prefetch(ahead);
                                memo.prefetch(ahead);
                                self.prefetch_shared_str(ahead);
                            }
                            // Codes while they are kept; once given up (at the
                            // slot, or at the probe after keeping its code),
                            // the slots of the cells so far, then slots.
                            let coding = !codes.given_up();
                            let (slot, code) = memo.slot(s, |s| self.str_slot(s), |slot| codes.code(slot));
                            let kept = codes.keep(code);
                            if codes.given_up() {
                                if coding {
                                    codes.slots_so_far(&mut slots);
                                }
                                if !kept {
                                    slots.push(slot);
                                }
                            }
                            self.strings_ahead = self.strings_ahead.saturating_sub(1);
                        }
                        slots
                    }
                    None => {
                        let mut slots = Vec::with_capacity(count);
                        g.for_each_scalar(rows, j, |s| {
                            slots.push(memo.slot(s, |s| self.str_slot(s), |_| 0).0);
                            self.strings_ahead = self.strings_ahead.saturating_sub(1);
                        });
                        slots
                    }
                };
                if let Some((dict, codes)) = codes.finish() {
                    return Ok(self.builder.str_code_column(&dict, &codes));
                }
                Ok(self.builder.seq(false, &slots))
            }
            _ if g.lists => self.slot_column(&g.collect_scalars(rows, j), false),
            _ => self.slot_column(&g.cells, column),
        }
    }

    /// Cells as a list of slots (lists of scalars as lists); a table's own
    /// column (`column`) of None, bools and small ints as a SLOT32_COLUMN,
    /// of repeated strings as a STR_CODE_COLUMN (`Builder::slot_column`).
    unsafe fn slot_column(&mut self, values: &[*mut PyObject], column: bool) -> PyResult<u64> {
        let mut slots = Vec::with_capacity(values.len());
        for (i, &v) in values.iter().enumerate() {
            // The cells were read while gathered, rows ago: out of cache.
            // Both lines an object of up to 48 bytes may span (an int of 3
            // or 4 digits at +24 crosses into the second at most places of
            // its size class), and further ahead than a walk's siblings (16
            // cells against 4): a column's cells lie a record apart.
            if let Some(&ahead) = values.get(i + SLOT_COLUMN_AHEAD) {
                prefetch(ahead);
                prefetch((ahead as *mut u8).wrapping_add(40) as *mut PyObject);
            }
            let slot = if ffi::Py_TYPE(v) == addr_of_mut!(ffi::PyList_Type) {
                let len = pylist::len(v);
                let items = pylist::items_ptr(v);
                match if len == 0 { None } else { self.number_list(items, len) } {
                    Some(s) => s,
                    None => {
                        let mut inner = Vec::with_capacity(len);
                        for i in 0..len {
                            inner.push(self.scalar_slot(*items.add(i))?);
                        }
                        self.builder.seq(false, &inner)
                    }
                }
            } else {
                self.scalar_slot(v)?
            };
            slots.push(slot);
        }
        // A table's own column of None, bools, small ints or repeated
        // strings: 4 bytes a cell.
        Ok(if column { self.builder.slot_column(&slots) } else { self.builder.seq(false, &slots) })
    }

    /// A scalar's slot, written as anywhere else.
    #[inline]
    unsafe fn scalar_slot(&mut self, v: *mut PyObject) -> PyResult<u64> {
        // `visit` tries containers first and, sharing on, looks every
        // scalar up by address.
        if !self.walk.shares() {
            if let Some(slot) = self.leaf_slot(v)? {
                return Ok(slot);
            }
        }
        Ok(self.visit(v)?.expect("a scalar has a slot"))
    }
}

/// Whether storing `key` as a dict key runs no Python code: the exact
/// built-in scalars, and tuples of them (other keys go through type
/// handlers, which may).
unsafe fn key_runs_no_python(key: *mut PyObject) -> bool {
    scalar_key_runs_no_python(key, 0)
}

unsafe fn scalar_key_runs_no_python(key: *mut PyObject, depth: usize) -> bool {
    let tp = ffi::Py_TYPE(key);
    if tp == addr_of_mut!(ffi::PyTuple_Type) {
        return depth < bale_core::hash::MAX_KEY_DEPTH
            && (0..pytuple::len(key)).all(|i| scalar_key_runs_no_python(pytuple::item(key, i), depth + 1));
    }
    tp == addr_of_mut!(ffi::PyUnicode_Type)
        || tp == addr_of_mut!(ffi::PyLong_Type)
        || tp == addr_of_mut!(ffi::PyFloat_Type)
        || tp == addr_of_mut!(ffi::PyBool_Type)
        || tp == addr_of_mut!(ffi::PyBytes_Type)
        || tp == addr_of_mut!(ffi::PyComplex_Type)
        || key == ffi::Py_None()
}
