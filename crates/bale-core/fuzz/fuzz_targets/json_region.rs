//! JSON text -> the core's JSON source -> region, for any bytes.
//!
//! `json_doc::parse` must refuse or read any input without a panic, a hang
//! or memory out of proportion to the input; what it reads, `JsonSource`
//! must write as a region that passes `verify`. And writing is idempotent
//! through JSON: the region's `to_json` text, parsed and written again,
//! gives the same region byte for byte (ints of any size, floats as `repr`
//! writes them, strings of every width, tables and their columns, keys
//! given twice), unless the value holds what JSON cannot (NaN, infinities).
//!
//! ```text
//! make fuzz-core FUZZ_SECONDS=120     # runs this target after load_verify_read
//! cargo +nightly fuzz run json_region fuzz/seeds_json   # from crates/bale-core
//! ```

#![no_main]

use bale_core::json_source::json_region;
use bale_core::{json, Region};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(bytes) = json_region(data, 4300) else { return };
    let region = match Region::new_verified(&bytes) {
        Ok(r) => r,
        Err(e) => panic!("the region written from JSON fails verify: {e}"),
    };
    let root = region.root().expect("a verified root decodes");
    let mut text = Vec::new();
    if json::to_json(&region.reader, root, &mut text).is_err() {
        // NaN or an infinity: no JSON form.
        return;
    }
    let again = json_region(&text, 0).unwrap_or_else(|e| panic!("to_json's text does not parse again: {e}"));
    assert!(again == bytes, "JSON -> region -> JSON -> region changed the bytes");
});
