//! Durable file operations: atomic publish (temp file → fsync → rename → fsync dir) and the
//! writer lock.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically: readers see the old file or the new one, never a mix,
/// and after return the new one survives a crash.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = temp_path(path);
    let result = (|| {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `name` → `.name.tmp-<pid>` in the same directory (same filesystem, so rename is atomic).
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Creates `dir` (and its parents) if missing; a directory created here is private to its
/// owner (0700): the index holds paths, symbols and code of possibly private repositories. An
/// existing directory keeps the mode its owner gave it.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        fs::create_dir_all(parent)?;
    }
    use std::os::unix::fs::DirBuilderExt;
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        other => other,
    }
}

/// Makes a rename or a new file in `dir` durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// An exclusive lock on the index directory, held by the one process that writes it. Readers
/// never take it: they read immutable snapshots.
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
}

/// How often a waiting writer tries the lock again (and lets its caller look at what the other
/// writer published meanwhile).
const LOCK_POLL: std::time::Duration = std::time::Duration::from_millis(200);

impl WriterLock {
    /// Whether some writer holds the lock of the index in `dir` now (a moment later it may not).
    pub fn is_held(dir: &Path) -> bool {
        let Ok(file) = OpenOptions::new().create(true).truncate(false).write(true).open(dir.join("LOCK")) else {
            return false;
        };
        matches!(file.try_lock(), Err(fs::TryLockError::WouldBlock))
    }

    /// Takes the lock. While another writer holds it, calls `while_waiting` about every
    /// [`LOCK_POLL`]; `false` from it gives up (`None`), e.g. on shutdown.
    pub fn acquire(dir: &Path, mut while_waiting: impl FnMut() -> bool) -> io::Result<Option<WriterLock>> {
        let file = OpenOptions::new().create(true).truncate(false).write(true).open(dir.join("LOCK"))?;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Some(WriterLock { _file: file })),
                Err(fs::TryLockError::WouldBlock) => {
                    if !while_waiting() {
                        return Ok(None);
                    }
                    std::thread::sleep(LOCK_POLL);
                }
                Err(fs::TryLockError::Error(err)) => return Err(err),
            }
        }
    }
}
