#![no_main]

use libfuzzer_sys::fuzz_target;

// Filled in by the module this target exercises.
fuzz_target!(|data: &[u8]| {
    let _ = data;
});
