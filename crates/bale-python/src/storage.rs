//! Where a region's bytes live: owned memory, a read-only file mapping,
//! another object's exported buffer, or an address-space reservation made
//! for appends. Bytes once written never change and never move; appends
//! only write past everything any region handle can see.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use bale_core::format::{HEADER_LEN, OFF_CHECKSUM, OFF_TOTAL_LEN};
use pyo3::ffi;
use pyo3::prelude::*;

/// What owns the memory; only held, to be dropped with the storage.
#[allow(dead_code)]
enum Backing {
    Heap(HeapBuffer),
    /// A reservation; its first bytes may map a region file (privately).
    Reserved(memmap2::MmapMut, Option<MappedFile>),
    /// A file's mapping, with the file when appends may map it again.
    Mapped(memmap2::Mmap, Option<MappedFile>),
    Exported(ExportedBuffer),
}

/// A region's own memory, given to `spare_buffer` when the storage goes.
struct HeapBuffer(Vec<u8>);

impl Drop for HeapBuffer {
    fn drop(&mut self) {
        crate::spare_buffer::offer(std::mem::take(&mut self.0));
    }
}

/// A region file mapped at the start of a storage: `len` bytes of `file`.
#[derive(Clone)]
struct MappedFile {
    file: std::sync::Arc<std::fs::File>,
    len: usize,
}

/// A block of memory whose first `len` bytes (as each region handle knows
/// its own `len`) are a region, with room to append when `capacity`
/// exceeds what has been written.
pub struct Storage {
    ptr: *mut u8,
    /// Bytes that may be read: those mapped, or for heap memory those
    /// initialized (the region, then everything appended into the spare
    /// capacity after it: `write` moves it up).
    readable: AtomicUsize,
    /// Bytes that may be written past the region: 0 for memory bale does not own.
    capacity: usize,
    /// For a region compacted here and not read as bytes yet: its header's
    /// checksum is still zero, and `ensure_checksum` writes it once.
    unsummed: Option<std::sync::OnceLock<()>>,
    _backing: Backing,
}

// The memory is only read, except for appends past every handle's end,
// which the region's lineage serializes. Exported buffers are released
// under the GIL (in tp_dealloc).
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

/// Owned regions smaller than this give back the spare room of their
/// allocation; larger ones keep it for appends (allocations this large
/// are mapped on demand, so room never touched costs no memory). It is
/// glibc's initial mmap threshold. glibc moves that threshold to the size
/// of the mapped block freed last; a block shrunk to its region's length
/// would set it below the next region's growth, and every region of that
/// size would start in fresh pages, faulted in one by one.
const KEEP_SPARE_FROM: usize = 128 << 10;

/// Smallest reservation made for appends.
const MIN_RESERVATION: usize = 64 << 20;

impl Storage {
    /// A region compacted here whose header's checksum field is still zero
    /// (`Builder::finish_unsummed`): it is written at the first read of the
    /// bytes as bytes (`ensure_checksum`).
    pub fn owned_unsummed(bytes: Vec<u8>) -> Storage {
        Storage { unsummed: Some(std::sync::OnceLock::new()), ..Storage::owned(bytes) }
    }

    pub fn owned(mut bytes: Vec<u8>) -> Storage {
        if bytes.len() < KEEP_SPARE_FROM {
            bytes.shrink_to_fit();
        }
        let (ptr, readable, capacity) = (bytes.as_mut_ptr(), bytes.len(), bytes.capacity());
        Storage {
            ptr,
            readable: AtomicUsize::new(readable),
            capacity,
            unsummed: None,
            _backing: Backing::Heap(HeapBuffer(bytes)),
        }
    }

    /// `bytes` at an address that is a multiple of 64 (numpy data lies at
    /// offsets that are): as they are when already aligned, else moved up
    /// to the next such address in the same allocation (a large one starts
    /// 16 bytes into a page; a copy into fresh pages would fault in every
    /// page of it again). Returns the storage and the region's length. As
    /// with `owned_unsummed`, the header's checksum is written later.
    pub fn owned_aligned_unsummed(mut bytes: Vec<u8>) -> std::io::Result<(Storage, usize)> {
        let len = bytes.len();
        let unsummed = Some(std::sync::OnceLock::new());
        if (bytes.as_ptr() as usize).is_multiple_of(64) {
            return Ok((Storage { unsummed, ..Storage::owned(bytes) }, len));
        }
        bytes.reserve(64);
        let shift = (64 - bytes.as_ptr() as usize % 64) % 64;
        bytes.resize(len + shift, 0);
        bytes.copy_within(0..len, shift);
        // SAFETY: `shift + len` bytes are initialized, within the allocation.
        let ptr = unsafe { bytes.as_mut_ptr().add(shift) };
        let capacity = bytes.capacity() - shift;
        Ok((
            Storage {
                ptr,
                readable: AtomicUsize::new(len),
                capacity,
                unsummed,
                _backing: Backing::Heap(HeapBuffer(bytes)),
            },
            len,
        ))
    }

    /// A mapping alone: its file descriptor is closed (a store keeps many
    /// segments mapped; a process has a limited number of descriptors).
    /// Appends copy its bytes instead of mapping the file again.
    pub fn mapped_alone(map: memmap2::Mmap) -> Storage {
        let (ptr, readable) = (map.as_ptr() as *mut u8, map.len());
        Storage {
            ptr,
            readable: AtomicUsize::new(readable),
            capacity: 0,
            unsummed: None,
            _backing: Backing::Mapped(map, None),
        }
    }

    pub fn mapped(map: memmap2::Mmap, file: std::fs::File) -> Storage {
        let (ptr, readable) = (map.as_ptr() as *mut u8, map.len());
        let file = MappedFile { file: std::sync::Arc::new(file), len: readable };
        Storage {
            ptr,
            readable: AtomicUsize::new(readable),
            capacity: 0,
            unsummed: None,
            _backing: Backing::Mapped(map, Some(file)),
        }
    }

    /// A new storage with the first `used` bytes of this one and room for
    /// `extra` more. A region file at the start is mapped again, privately
    /// (O(1): its pages are neither read nor copied, and never written back).
    pub fn grown(&self, used: usize, extra: usize) -> std::io::Result<Storage> {
        // The copy's header is a finished one.
        self.ensure_checksum();
        let file = match &self._backing {
            Backing::Mapped(_, f) => f.as_ref(),
            Backing::Reserved(_, f) => f.as_ref(),
            _ => None,
        };
        match file {
            #[cfg(unix)]
            Some(f) if f.len <= used => {
                let mut fresh = Storage::reserve(used + extra)?;
                fresh.map_file_at_start(f)?;
                // Safety: `fresh` is new; nothing reads it yet.
                unsafe { fresh.write(f.len, &self.prefix(used)[f.len..]) };
                Ok(fresh)
            }
            _ => {
                let fresh = Storage::reserve(used + extra)?;
                unsafe { fresh.write(0, self.prefix(used)) };
                Ok(fresh)
            }
        }
    }

    /// Replaces the first pages of a fresh reservation by a private,
    /// writable mapping of the file: writes past the file's end (in its last
    /// page) stay in this process's copy.
    #[cfg(unix)]
    fn map_file_at_start(&mut self, f: &MappedFile) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let Backing::Reserved(_, slot) = &mut self._backing else { unreachable!("a fresh reservation") };
        // Safety: the range lies inside our own reservation, which MAP_FIXED replaces.
        let p = unsafe {
            libc::mmap(
                self.ptr as *mut libc::c_void,
                f.len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_FIXED,
                f.file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED || p as *mut u8 != self.ptr {
            return Err(std::io::Error::last_os_error());
        }
        *slot = Some(f.clone());
        Ok(())
    }

    pub fn exported(buf: ExportedBuffer) -> Storage {
        let b = buf.bytes();
        let (ptr, readable) = (b.as_ptr() as *mut u8, b.len());
        Storage {
            ptr,
            readable: AtomicUsize::new(readable),
            capacity: 0,
            unsummed: None,
            _backing: Backing::Exported(buf),
        }
    }

    /// Fresh memory for at least `need` bytes: address space is reserved
    /// generously (pages are only allocated when written), so that later
    /// appends rarely need another copy.
    fn reserve(need: usize) -> std::io::Result<Storage> {
        let want = need.saturating_mul(2).max(MIN_RESERVATION);
        let mut map = match memmap2::MmapOptions::new().len(want).no_reserve_swap().map_anon() {
            Ok(m) => m,
            // Strict overcommit may refuse a large reservation: take what is needed.
            Err(_) => memmap2::MmapOptions::new().len(need.max(1)).map_anon()?,
        };
        let (ptr, capacity) = (map.as_mut_ptr(), map.len());
        Ok(Storage {
            ptr,
            readable: AtomicUsize::new(capacity),
            capacity,
            unsummed: None,
            _backing: Backing::Reserved(map, None),
        })
    }

    /// The first `len` bytes; `len` is a length some handle was made with.
    #[inline]
    pub fn prefix(&self, len: usize) -> &[u8] {
        debug_assert!(len <= self.readable.load(Ordering::Acquire));
        if len == 0 {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(self.ptr, len) }
    }

    // Note [The checksum written late]
    // A region's header holds the XXH3 of all its bytes. Computing it is
    // a pass over every byte: for long strings, half of `compact`'s time.
    // A region used in place by the process that compacted it never needs
    // it: only its bytes read as bytes do (a buffer export, `bytes()`,
    // `save`, a store span that covers the header, `verify`, pickling, a
    // send or a share, which all export). So `compact` leaves the field
    // zero and the storage writes it at the first such read. The 8 bytes
    // change once, from zero, under a OnceLock; nothing reads them but
    // those reads, which all go through `ensure_checksum` (through
    // `Region::contiguous` or `_span`) and so wait for the write. A storage
    // grown for appends is copied from a finished header. Tests:
    // tests/unit/test_checksum.py.
    /// Writes the checksum of the region at the start of this storage into
    /// its header, once, when `owned_unsummed` left it zero; else nothing.
    /// Every read of a region's bytes as bytes (exports, `bytes()`, saves,
    /// spans, verify) calls it first: see Note [The checksum written late].
    pub fn ensure_checksum(&self) {
        let Some(once) = &self.unsummed else { return };
        once.get_or_init(|| {
            let header = self.prefix(HEADER_LEN);
            let total = u64::from_le_bytes(header[OFF_TOTAL_LEN..OFF_TOTAL_LEN + 8].try_into().expect("8 bytes"));
            // The field is zero, so the bytes as they are hash as FORMAT.md
            // says (the field taken as zero), in one pass.
            let sum = bale_core::xxh3_64(self.prefix(total as usize));
            // SAFETY: heap memory owned here, at least HEADER_LEN bytes;
            // the 8 bytes written are read by nothing but callers of this
            // function, which wait for it (the OnceLock).
            unsafe { std::ptr::copy_nonoverlapping(sum.to_le_bytes().as_ptr(), self.ptr.add(OFF_CHECKSUM), 8) };
        });
    }

    /// All the bytes that exist (for adopting a buffer or a file).
    pub fn all(&self) -> &[u8] {
        self.prefix(self.readable.load(Ordering::Acquire))
    }

    /// Whether `extra` bytes can be written at `at` in place.
    pub fn has_room(&self, at: usize, extra: usize) -> bool {
        at.checked_add(extra).is_some_and(|end| end <= self.capacity)
    }

    /// Writes `data` at `at`.
    ///
    /// # Safety
    /// `has_room(at, data.len())` must hold, no handle may cover any byte at
    /// or after `at`, and no other thread may write at the same time.
    pub unsafe fn write(&self, at: usize, data: &[u8]) {
        debug_assert!(self.has_room(at, data.len()));
        std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(at), data.len());
        // Heap storage: the spare capacity just written is now initialized,
        // readable by the handles made on it.
        self.readable.fetch_max(at + data.len(), Ordering::Release);
    }
}

/// A `Py_buffer` obtained from an exporter; keeps the exporter alive.
pub struct ExportedBuffer {
    view: Box<ffi::Py_buffer>,
}

impl ExportedBuffer {
    /// Asks `obj` for a contiguous buffer (any exporter: bytes, bytearray,
    /// memoryview, mmap, numpy arrays, shared memory).
    pub fn new(obj: &Bound<'_, PyAny>) -> PyResult<ExportedBuffer> {
        let mut view: Box<ffi::Py_buffer> = Box::new(unsafe { std::mem::zeroed() });
        let rc = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, ffi::PyBUF_SIMPLE) };
        if rc != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        Ok(ExportedBuffer { view })
    }

    #[inline]
    pub fn bytes(&self) -> &[u8] {
        if self.view.len <= 0 || self.view.buf.is_null() {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(self.view.buf as *const u8, self.view.len as usize) }
    }
}

impl Drop for ExportedBuffer {
    fn drop(&mut self) {
        // Regions are dropped by their tp_dealloc, which runs with the GIL held.
        unsafe { ffi::PyBuffer_Release(&mut *self.view as *mut ffi::Py_buffer) };
    }
}

pub fn buffer_ptr(b: &[u8]) -> *mut c_void {
    b.as_ptr() as *mut c_void
}
