//! `pathlib` paths: the PATH kind, a typed scalar holding a path's class
//! and its text. Its layout, checks and key equality live here.
//!
//! Layout: the header's `len` field is `class | n << 8` (bits 4..7 zero);
//! the payload is the n bytes of `str(path)` in UTF-8, where a lone
//! surrogate (as `os.fsdecode` makes of an undecodable file name) is
//! encoded as any other code point, in 3 bytes (CPython's `surrogatepass`).
//!
//! Note [Path equality]: Python compares two posix paths by their text
//! (`PurePosixPath('a') == PosixPath('a')`, and `'a//b'` is stored as the
//! `'a/b'` it normalizes to), so a posix path is a key whose equality and
//! hash are those of its text with the class taken as `PurePosixPath`; the
//! text must then be in the normal form `str()` gives, which is checked on
//! every read. Windows paths compare case-insensitively, by rules this
//! crate does not reproduce, so they are values only: the compactor
//! refuses them as keys and equality leaves them to Python.

use crate::typed::Ext;

pub const PURE_POSIX: u64 = 1;
pub const POSIX: u64 = 2;
pub const PURE_WINDOWS: u64 = 3;
pub const WINDOWS: u64 = 4;

/// The class of a path, as `pathlib` names it.
pub fn class_name(class: u64) -> &'static str {
    match class {
        PURE_POSIX => "PurePosixPath",
        POSIX => "PosixPath",
        PURE_WINDOWS => "PureWindowsPath",
        WINDOWS => "WindowsPath",
        _ => "path",
    }
}

pub fn is_posix(class: u64) -> bool {
    class == PURE_POSIX || class == POSIX
}

/// The header field and payload of a path of `class` whose `str()` is `text`
/// (UTF-8 with surrogates, as above).
pub fn encode(class: u64, text: &[u8]) -> (u64, Vec<u8>) {
    (class | (text.len() as u64) << 8, text.to_vec())
}

/// Payload bytes of a path whose header field is `aux`.
pub fn payload_len(aux: u64) -> Result<usize, &'static str> {
    if !(PURE_POSIX..=WINDOWS).contains(&(aux & 0xFF)) {
        return Err("unknown path class");
    }
    Ok((aux >> 8) as usize)
}

/// A stored path: its class and its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Path<'a> {
    pub class: u64,
    pub text: &'a [u8],
}

pub fn decode<'a>(e: &Ext<'a>) -> Result<Path<'a>, &'static str> {
    if e.kind != crate::format::KIND_PATH || payload_len(e.aux) != Ok(e.payload.len()) {
        return Err("not a path's header and payload");
    }
    let p = Path { class: e.aux & 0xFF, text: e.payload };
    if !utf8_with_surrogates(p.text) {
        return Err("path text is not UTF-8");
    }
    if is_posix(p.class) && !posix_normal(p.text) {
        return Err("posix path text is not in normal form");
    }
    if p.text.is_empty() {
        return Err("path text is empty");
    }
    Ok(p)
}

/// The header field as equality and the key hash see it (Note [Path equality]).
pub fn equality_aux(aux: u64) -> u64 {
    if is_posix(aux & 0xFF) {
        aux & !0xFF | PURE_POSIX
    } else {
        aux
    }
}

/// Whether `t` is what `str(PurePosixPath(t))` gives: `.` for the empty
/// path, else an optional root (`/`, or exactly `//`) and parts joined by
/// single slashes, none empty or `.`, no trailing slash.
pub fn posix_normal(t: &[u8]) -> bool {
    if t == b"." {
        return true;
    }
    let rest = if t.starts_with(b"//") && !t.starts_with(b"///") { &t[2..] } else { t.strip_prefix(b"/").unwrap_or(t) };
    if rest.is_empty() {
        return !t.is_empty();
    }
    rest.split(|&c| c == b'/').all(|part| !part.is_empty() && part != b".")
}

/// UTF-8 in which code points 0xD800..0xDFFF may appear (as `ED A0..BF xx`).
pub fn utf8_with_surrogates(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        match std::str::from_utf8(&b[i..]) {
            Ok(_) => return true,
            Err(e) => {
                i += e.valid_up_to();
                match b[i..] {
                    [0xED, 0xA0..=0xBF, 0x80..=0xBF, ..] => i += 3,
                    _ => return false,
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posix_normal_forms() {
        for ok in [".", "/", "//", "a", "a/b", "/a/b", "//a", "..", "a/../b", "a\0b", ".a", "a."] {
            assert!(posix_normal(ok.as_bytes()), "{ok}");
        }
        for bad in ["", "./a", "a/", "a//b", "///", "///a", "a/./b", "/.", "a/.", "//."] {
            assert!(!posix_normal(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn surrogates_pass_and_broken_utf8_does_not() {
        assert!(utf8_with_surrogates("é/日本".as_bytes()));
        assert!(utf8_with_surrogates(b"a\xed\xb2\x80b"));
        assert!(!utf8_with_surrogates(b"a\xed\xb2"));
        assert!(!utf8_with_surrogates(b"\xff"));
        assert!(!utf8_with_surrogates(b"\xc0\x80"));
    }

    #[test]
    fn posix_classes_compare_alike() {
        let (a, _) = encode(POSIX, b"a");
        let (b, _) = encode(PURE_POSIX, b"a");
        assert_eq!(equality_aux(a), equality_aux(b));
        let (w, _) = encode(PURE_WINDOWS, b"a");
        assert_ne!(equality_aux(w), equality_aux(b));
        assert!(payload_len(0).is_err() && payload_len(5).is_err() && payload_len(0x10).is_err());
    }
}
