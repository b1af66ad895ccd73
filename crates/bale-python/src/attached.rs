//! State that the hottest paths reach without a lock or a thread-local
//! lookup: the views' free lists and the row caches.
//!
//! With a GIL, threads attached to the interpreter run one at a time, and
//! every access here is made by an attached thread (a `tp_dealloc`, or code
//! holding a `Python` token); PyO3 modules refuse subinterpreters, so there
//! is one such lock. That makes a plain static safe, and much cheaper than
//! a thread-local in a shared library (a call to `__tls_get_addr` each
//! time). Free-threaded builds have no such lock: there, each thread gets
//! its own copy.

/// Declares `static $name: Attached<$t>`, used through `with(&$name, ...)`.
macro_rules! attached {
    ($name:ident: $t:ty = $init:expr) => {
        #[cfg(not(Py_GIL_DISABLED))]
        static $name: $crate::attached::Attached<$t> = $crate::attached::Attached::new($init);
        #[cfg(Py_GIL_DISABLED)]
        thread_local! {
            static $name: $crate::attached::Attached<$t> = const { $crate::attached::Attached::new($init) };
        }
    };
}
pub(crate) use attached;

pub struct Attached<T>(std::cell::UnsafeCell<T>);

// Safety: see the module docs; every access is made under the GIL.
#[cfg(not(Py_GIL_DISABLED))]
unsafe impl<T> Sync for Attached<T> {}

impl<T> Attached<T> {
    pub const fn new(value: T) -> Attached<T> {
        Attached(std::cell::UnsafeCell::new(value))
    }
}

/// `f` on the value of an `attached!` static.
///
/// # Safety
/// The calling thread is attached to the interpreter, and `f` runs no code
/// (Python code, a destructor) that could reach the value again.
#[cfg(not(Py_GIL_DISABLED))]
#[inline(always)]
pub unsafe fn with<T, R>(cell: &'static Attached<T>, f: impl FnOnce(&mut T) -> R) -> R {
    f(&mut *cell.0.get())
}

#[cfg(Py_GIL_DISABLED)]
#[inline(always)]
pub unsafe fn with<T: 'static, R>(cell: &'static std::thread::LocalKey<Attached<T>>, f: impl FnOnce(&mut T) -> R) -> R {
    cell.with(|c| f(&mut *c.0.get()))
}
