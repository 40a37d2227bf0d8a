//! Fixture trees for binary-level tests.

#![allow(dead_code, clippy::unwrap_used)]

use std::fs;
use std::path::Path;

/// Copies the tree at `from` into `to` (created if missing).
pub fn copy_dir(from: &Path, to: &Path) {
    copy_dir_except(from, to, &[]);
}

/// Copies the tree at `from` into `to`, leaving out entries named in `skip` at any depth.
pub fn copy_dir_except(from: &Path, to: &Path, skip: &[&str]) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if skip.iter().any(|s| name == **s) {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_dir_except(&entry.path(), &target, skip);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}
