//! New files that appear at their path only when complete (`Region.save`,
//! `bale.Writer`), and leave nothing behind when the process dies first.
//!
//! On Linux the bytes go to an unnamed file (`O_TMPFILE`), which the kernel
//! frees when the process ends however it ends; once written and synced it
//! gets its name with `linkat`. A target that already exists is replaced by
//! linking the file to a temporary name and renaming that over the target
//! (the name exists only between those two calls). Where `O_TMPFILE` is not
//! supported (some file systems, other systems) the bytes go to a named
//! temporary file, `.NAME.PID-NONCE.tmp` (or `.partial`), held under an
//! exclusive `flock`; every save that uses a temporary name first removes
//! the temporaries of the same target left by processes that are gone
//! (their pid is not alive and nothing holds their lock).
//!
//! `BALE_NO_O_TMPFILE=1` in the environment makes bale use the named
//! temporary file everywhere (for tests of that path).

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// A file being written for `target`: `persist` gives it the target's name.
/// Dropped without `persist`, it leaves nothing at the target nor beside it.
pub struct Pending {
    target: PathBuf,
    dir: PathBuf,
    name: OsString,
    /// The temporary file's path when it has one (no `O_TMPFILE`).
    named: Option<PathBuf>,
    /// The process that made it: a forked child dropping its copy of a
    /// writer must not remove the file its parent is still writing.
    owner: u32,
}

fn dir_and_name(target: &Path) -> io::Result<(PathBuf, OsString)> {
    let name = target
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?
        .to_os_string();
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name))
}

fn nonce() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    t.wrapping_add(COUNTER.fetch_add(1, Ordering::Relaxed) << 32)
}

/// `.NAME.PID-NONCE.SUFFIX` in `dir`.
fn temp_path(dir: &Path, name: &OsString, suffix: &str) -> PathBuf {
    dir.join(format!(".{}.{}-{}.{suffix}", name.to_string_lossy(), std::process::id(), nonce()))
}

const SUFFIXES: [&str; 2] = ["tmp", "partial"];

#[cfg(target_os = "linux")]
fn use_o_tmpfile() -> bool {
    std::env::var_os("BALE_NO_O_TMPFILE").is_none_or(|v| v.is_empty() || v == "0")
}

/// Opens a new file for `target` (read and write). `suffix` names the
/// temporary file where one is needed: "tmp" or "partial".
pub fn create(target: &Path, suffix: &'static str) -> io::Result<(File, Pending)> {
    let (dir, name) = dir_and_name(target)?;
    // A directory cannot be replaced (rename would fail only at the end; a
    // symbolic link is replaced itself, as rename does).
    if std::fs::symlink_metadata(target).is_ok_and(|m| m.is_dir()) {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    let mut pending = Pending { target: target.to_path_buf(), dir, name, named: None, owner: std::process::id() };
    #[cfg(target_os = "linux")]
    if use_o_tmpfile() && Path::new("/proc/self/fd").is_dir() {
        use std::os::unix::fs::OpenOptionsExt;
        match OpenOptions::new()
            .read(true)
            .write(true)
            .mode(0o666)
            .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
            .open(&pending.dir)
        {
            Ok(f) => return Ok((f, pending)),
            // No O_TMPFILE on this file system (EOPNOTSUPP), or in this
            // kernel (EISDIR, EINVAL): a named temporary file instead.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)) => {}
            Err(e) => return Err(e),
        }
    }
    remove_dead_temporaries(&pending.dir, &pending.name);
    loop {
        let tmp = temp_path(&pending.dir, &pending.name, suffix);
        match OpenOptions::new().read(true).write(true).create_new(true).open(&tmp) {
            Ok(f) => {
                // Held until the file is closed (or the process ends): what
                // tells another process that the file is still being written.
                #[cfg(unix)]
                unsafe {
                    use std::os::fd::AsRawFd;
                    libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB);
                }
                pending.named = Some(tmp);
                return Ok((f, pending));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

impl Pending {
    /// Syncs `file` (which must be the one `create` returned, fully
    /// written) and moves it to the target path, replacing what was there.
    pub fn persist(mut self, file: &File) -> io::Result<()> {
        file.sync_all()?;
        match self.named.take() {
            Some(tmp) => {
                let renamed = std::fs::rename(&tmp, &self.target);
                if renamed.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                renamed?;
            }
            None => self.link(file)?,
        }
        // Make the new name itself durable.
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Gives the unnamed file its name.
    #[cfg(target_os = "linux")]
    fn link(&self, file: &File) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        match link_fd(file.as_raw_fd(), &self.target) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        // The target exists: link under a temporary name, then rename over it.
        remove_dead_temporaries(&self.dir, &self.name);
        let tmp = loop {
            let tmp = temp_path(&self.dir, &self.name, "tmp");
            match link_fd(file.as_raw_fd(), &tmp) {
                Ok(()) => break tmp,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        let renamed = std::fs::rename(&tmp, &self.target);
        if renamed.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        renamed
    }

    #[cfg(not(target_os = "linux"))]
    fn link(&self, _file: &File) -> io::Result<()> {
        unreachable!("unnamed files are made on Linux only")
    }
}

impl Pending {
    /// The named temporary file, where one was made.
    pub fn named_path(&self) -> Option<&Path> {
        self.named.as_deref()
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(tmp) = self.named.take() {
            if std::process::id() == self.owner {
                let _ = std::fs::remove_file(tmp);
            }
        }
    }
}

/// `linkat` of an open unnamed file to `path` (through /proc, which needs
/// no privilege, unlike `AT_EMPTY_PATH`).
#[cfg(target_os = "linux")]
fn link_fd(fd: std::os::fd::RawFd, path: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let from = CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL");
    let to = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // Safety: both are NUL-terminated paths.
    let rc =
        unsafe { libc::linkat(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::AT_SYMLINK_FOLLOW) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The pid in a temporary file name of the target `name`:
/// `.NAME.PID-NONCE.tmp` or `.NAME.PID-NONCE.partial`.
fn temporary_pid(entry: &str, name: &str) -> Option<i32> {
    let rest = entry.strip_prefix('.')?.strip_prefix(name)?.strip_prefix('.')?;
    let rest = SUFFIXES.iter().find_map(|s| rest.strip_suffix(s)?.strip_suffix('.'))?;
    let (pid, nonce) = rest.split_once('-')?;
    if pid.is_empty()
        || nonce.is_empty()
        || !pid.bytes().all(|b| b.is_ascii_digit())
        || !nonce.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    pid.parse().ok().filter(|&p: &i32| p > 0)
}

/// Removes the temporary files of the target `name` in `dir` whose process
/// is gone: its pid is not alive here and no one holds the file's lock (a
/// process on another host sharing the directory holds it while it writes).
/// Best effort: errors leave the file where it is.
pub fn remove_dead_temporaries(dir: &Path, name: &OsString) {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let Some(name) = name.to_str() else { return };
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(pid) = file_name.to_str().and_then(|n| temporary_pid(n, name)) else { continue };
            // Safety: signal 0 only checks that the process exists.
            let alive =
                unsafe { libc::kill(pid, 0) } == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
            if alive || !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let path = entry.path();
            let Ok(f) = File::open(&path) else { continue };
            // Safety: a valid descriptor; the lock goes with it.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::temporary_pid;

    #[test]
    fn temporary_names() {
        assert_eq!(temporary_pid(".a.bale.123-456.tmp", "a.bale"), Some(123));
        assert_eq!(temporary_pid(".a.bale.123-456.partial", "a.bale"), Some(123));
        assert_eq!(temporary_pid(".a.bale.123-456.tmp", "b.bale"), None);
        assert_eq!(temporary_pid(".a.bale.x-456.tmp", "a.bale"), None);
        assert_eq!(temporary_pid(".a.bale.123-.tmp", "a.bale"), None);
        assert_eq!(temporary_pid("a.bale.123-456.tmp", "a.bale"), None);
        assert_eq!(temporary_pid(".a.bale.123-456.tmp.x", "a.bale"), None);
    }
}
