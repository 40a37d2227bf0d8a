//! Fixture trees for binary-level tests.

#![allow(dead_code, clippy::unwrap_used)]

use std::fs;
use std::path::Path;

/// Copies the tree at `from` into `to` (created if missing).
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}
