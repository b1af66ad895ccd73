//! # bale-core
//!
//! The pure-Rust core of bale: the compact-region format (see
//! `docs/FORMAT.md` in the repository), a [`Builder`] that writes regions,
//! a bounds-checked zero-copy [`Reader`], the stable key hash, Python-style
//! equality between stored values, and a full [`verify`] pass.
//!
//! Reading a region saved from Python (`region.save("data.bale")`):
//!
//! ```no_run
//! use bale_core::{Region, Value};
//! let bytes = std::fs::read("data.bale").unwrap();
//! let region = Region::new_verified(&bytes).unwrap();
//! if let Value::List(records) = region.root().unwrap() {
//!     let first = region.reader.seq_item(records, 0).unwrap();
//!     if let Value::Dict(d) = first {
//!         let user = bale_core::lookup_str(&region.reader, d, "user_id").unwrap();
//!         println!("{:?}", user);
//!     }
//! }
//! ```

pub mod columns;
pub mod dict_class;
pub mod encoder;
pub mod equality;
pub mod error;
pub mod extern_ref;
pub mod format;
pub mod fraction;
pub mod hash;
pub mod id_dict;
pub mod index_table;
pub mod json;
pub mod json_doc;
pub mod json_source;
pub mod layout;
pub mod num_list;
pub mod path;
pub mod reader;
pub mod stats;
pub mod streamed;
pub mod transplant;
pub mod typed;
pub mod verify;
pub mod writer;

pub use columns::{Child, Column, ColumnKind};
pub use encoder::{encode, Container, Source, Walk};
pub use equality::values_eq;
pub use error::{FormatError, Result};
pub use extern_ref::Extern;
pub use reader::{
    announced_length, compute_checksum, compute_checksum_split, fill_checksum, header_bytes, parse_header, xxh3_64,
    ChecksumStream, Dict, Header, NdArray, NumList, Number, Reader, RecType, Record, Region, Seq, Str, Table, Value,
};
pub use transplant::Transplant;
pub use typed::Ext;
pub use verify::{verify, verify_report, ArrayType, Report};
pub use writer::{Builder, ForwardRefs};

/// Looks up a string key in a dict; `None` when absent.
pub fn lookup_str<'a>(r: &Reader<'a>, d: Dict, key: &str) -> Result<Option<Value<'a>>> {
    let mut scratch = Builder::with_capacity(64 + key.len() * 4);
    let slot = scratch.str_utf8(key);
    let probe_reader = Reader::new(scratch.bytes());
    let probe = probe_reader.decode(slot, scratch.len())?;
    let h = hash::hash_value(&probe_reader, probe, 0)?;
    match r.dict_find_with(d, || Ok(h), |k| values_eq(&probe_reader, probe, r, k))? {
        Some(i) => Ok(Some(r.dict_value(d, i)?)),
        None => Ok(None),
    }
}
