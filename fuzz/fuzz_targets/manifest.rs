//! The manifest decoder on arbitrary bytes: a damaged index must be an error, never a crash.
//! The first byte chooses between the bytes as a whole file (footer and checksum included) and
//! the bytes as a payload given a valid footer, so mutations reach rkyv's validation instead of
//! stopping at the checksum.

#![no_main]

use libfuzzer_sys::fuzz_target;
use raggrep::index::{check_manifest_bytes, manifest_with_footer};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode % 2 == 0 {
        let _ = check_manifest_bytes(rest);
    } else {
        // A whole manifest file as the seed: strip its footer (24 bytes) and write a fresh one.
        let payload = if mode % 4 == 1 { &rest[..rest.len().saturating_sub(24)] } else { rest };
        let _ = check_manifest_bytes(&manifest_with_footer(payload));
    }
});
