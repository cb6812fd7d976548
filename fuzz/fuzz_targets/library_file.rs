//! Library files (`propel_abi::file`): any bytes are refused with a
//! reason or accepted as sealed, never a panic or an allocation larger
//! than the file.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Cursor;

fuzz_target!(|data: &[u8]| {
    let len = data.len() as u64;
    if let Ok(sealed) = propel_abi::file::check_contents(&mut Cursor::new(data), len) {
        assert!(sealed.length + propel_abi::file::TRAILER_LEN as u64 == len);
    }
});
