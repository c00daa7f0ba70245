//! The state loader must turn any bytes, read from a file as every command reads the state
//! (the bounded read first), into a state or a located error, never a panic; a state it accepts
//! must write back and load again to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rkers_core::state::StateFile;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("rkers-fuzz-{}.rkestate", std::process::id()));
    std::fs::write(&path, data).expect("the temp dir is writable");
    let loaded = StateFile::load(&path);
    if std::str::from_utf8(data).is_err() {
        assert!(loaded.is_err(), "bytes that are not UTF-8 loaded as a state");
        return;
    }
    if let Ok(Some(state)) = loaded {
        let written = state.to_json().expect("a loaded state serializes");
        let again =
            StateFile::from_json(&written, &path).expect("what rkers writes, rkers reads");
        assert_eq!(state, again);
    }
});
