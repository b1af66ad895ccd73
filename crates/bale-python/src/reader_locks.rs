//! The store's reader table (STORE.md, *Readers*): each open store holds a
//! shared lock on one byte of its `READERS` file, the byte at its
//! snapshot's generation, and a writer removes a freed segment only when no
//! lock lies below the generation that freed it. Readers can then map a
//! segment at its first read rather than at open, as LMDB's reader table
//! lets its readers keep pages a writer freed.
//!
//! Open-file-description locks (`F_OFD_SETLK`, Linux 3.15): one per open of
//! the file, not per process, so two stores of one process lock apart and
//! see each other; the kernel drops a lock when its last descriptor
//! closes, so a reader killed with `kill -9` holds nothing.

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

/// Generations are file offsets: locks past the file's end are allowed.
const MAX_GENERATION: u64 = (1 << 62) - 1;

#[cfg(target_os = "linux")]
fn request(fd: i32, cmd: i32, kind: i32, start: u64, len: u64) -> std::io::Result<libc::flock> {
    // Safety: `flock` is plain data; zero is a valid value of every field
    // (and OFD locks require `l_pid` to be 0).
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = start as libc::off_t;
    lock.l_len = len as libc::off_t;
    // Safety: `lock` is a valid `flock` for the call's duration; a bad
    // descriptor is reported as EBADF.
    if unsafe { libc::fcntl(fd, cmd, &mut lock) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(lock)
}

fn check_generation(generation: u64) -> PyResult<()> {
    if generation == 0 || generation > MAX_GENERATION {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a reader lock's generation must be in [1, 2^62), not {generation}"
        )));
    }
    Ok(())
}

/// Store support: takes (`hold`) or releases the shared lock on byte
/// `generation` of the open `READERS` file `fd`. Never waits: no one takes
/// an exclusive lock on that file (writers only test for locks).
#[pyfunction]
pub fn _reader_lock(fd: i32, generation: u64, hold: bool) -> PyResult<()> {
    check_generation(generation)?;
    #[cfg(target_os = "linux")]
    {
        let kind = if hold { libc::F_RDLCK } else { libc::F_UNLCK };
        request(fd, libc::F_OFD_SETLK, kind, generation, 1)
            .map(|_| ())
            .map_err(|e| PyOSError::new_err(format!("reader lock on the store's READERS file: {e}")))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (fd, hold);
        Err(PyOSError::new_err("reader locks need Linux's open file description locks"))
    }
}

/// Store support: the lowest generation below `below` that an open store
/// (of any process, this one's too, `fd`'s own open excepted) holds a
/// reader lock on, or None. One `F_OFD_GETLK` per reader generation found,
/// lowest last.
#[pyfunction]
pub fn _oldest_reader(fd: i32, below: u64) -> PyResult<Option<u64>> {
    #[cfg(target_os = "linux")]
    {
        let mut below = below.min(MAX_GENERATION + 1);
        let mut oldest = None;
        while below > 0 {
            // A write lock over [0, below) conflicts with every read lock there.
            let found = request(fd, libc::F_OFD_GETLK, libc::F_WRLCK, 0, below)
                .map_err(|e| PyOSError::new_err(format!("reading the store's READERS file's locks: {e}")))?;
            if found.l_type == libc::F_UNLCK as libc::c_short {
                break;
            }
            let start = found.l_start.max(0) as u64;
            if start >= below {
                break; // not below: cannot happen, but must not loop
            }
            oldest = Some(start);
            below = start;
        }
        Ok(oldest)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (fd, below);
        Err(PyOSError::new_err("reader locks need Linux's open file description locks"))
    }
}
