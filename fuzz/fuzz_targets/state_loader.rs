//! The state loader must turn any bytes into a state or a located error, never a panic; a
//! state it accepts must write back and load again to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(state) = rkers::state::StateFile::from_json(text, Path::new("fuzz.rkestate")) {
        let written = state.to_json().expect("a loaded state serializes");
        let again = rkers::state::StateFile::from_json(&written, Path::new("fuzz.rkestate"))
            .expect("what rkers writes, rkers reads");
        assert_eq!(state, again);
    }
});
