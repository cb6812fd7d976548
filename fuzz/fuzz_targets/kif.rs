//! The KIF reader and validator: any bytes give a game or an error that
//! names the file (and a line and column from 1), never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = propel_compiler::load("fuzz.kif", data.to_vec()) {
        let text = e.to_string();
        assert!(text.starts_with("fuzz.kif"), "the error must name the file: {text}");
        if let Some(loc) = &e.loc {
            assert!(loc.line >= 1 && loc.col >= 1, "{text}");
        }
    }
});
