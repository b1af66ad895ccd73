//! Dicts of the `collections` classes: the DICT_CLASS kind, a DICT with a
//! class word (`OrderedDict`, `Counter`, `defaultdict` and its factory).
//!
//! Layout: like a DICT (the header's `len` field is its SHAPE's offset
//! divided by 8), with one word before the value slots: the class in bits
//! 0..7 (`ORDERED`, `COUNTER`, `DEFAULT`) and, for a `defaultdict`, its
//! factory in bits 8..15 (a builtin type by number, or none). Everything
//! else about it is a dict's, so readers see it as `Value::Dict` whose
//! `class` is not `PLAIN`.
//!
//! Note [Only builtin factories]: a `defaultdict` calls its factory on a
//! missing key. Storing the factory by name would make a reader import and
//! call code named by the bytes; storing a number among a few builtin
//! types lets a reader rebuild the defaultdict without running anything
//! the bytes chose. The compactor refuses other factories, naming them.

/// A plain dict (`Dict::class` of a DICT object or a table row).
pub const PLAIN: u64 = 0;
pub const ORDERED: u64 = 1;
pub const COUNTER: u64 = 2;
pub const DEFAULT: u64 = 3;

/// The factories a `defaultdict` may have, by number (0: `None`).
pub const FACTORIES: [&str; 8] = ["None", "list", "dict", "set", "int", "float", "str", "tuple"];

/// The class word of a class and (for `DEFAULT`) a factory number.
pub fn class_word(class: u64, factory: u64) -> u64 {
    class | factory << 8
}

/// Checks a stored class word.
pub fn check_word(word: u64) -> Result<(), &'static str> {
    match word & 0xFF {
        ORDERED | COUNTER if word >> 8 == 0 => Ok(()),
        DEFAULT if word >> 8 < FACTORIES.len() as u64 => Ok(()),
        ORDERED | COUNTER | DEFAULT => Err("dict class word has unknown factory bits"),
        _ => Err("unknown dict class"),
    }
}

/// The Python name of a dict class, for messages.
pub fn class_name(word: u64) -> &'static str {
    match word & 0xFF {
        PLAIN => "dict",
        ORDERED => "OrderedDict",
        COUNTER => "Counter",
        _ => "defaultdict",
    }
}

/// The factory of a `defaultdict`'s class word, by name.
pub fn factory_name(word: u64) -> &'static str {
    FACTORIES.get((word >> 8) as usize).copied().unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_words() {
        assert!(check_word(class_word(ORDERED, 0)).is_ok());
        assert!(check_word(class_word(DEFAULT, 7)).is_ok());
        assert!(check_word(class_word(DEFAULT, 8)).is_err());
        assert!(check_word(class_word(COUNTER, 1)).is_err());
        assert!(check_word(0).is_err() && check_word(4).is_err());
        assert_eq!((class_name(class_word(DEFAULT, 1)), factory_name(class_word(DEFAULT, 1))), ("defaultdict", "list"));
    }
}
