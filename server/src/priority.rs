//! CPU priority of background work. On Linux the nice value belongs to a thread, and threads
//! inherit it from the thread that creates them, so an indexer thread that lowers its own
//! priority, and an inference session whose worker threads are created by a lowered thread,
//! yield the CPU to the editor (and to searches, which run on other threads) without slowing a
//! machine that is otherwise idle.

use serde::{Deserialize, Serialize};

/// The nice value background indexing runs at (the git hooks' `nice -n 10` too).
pub const BACKGROUND_NICE: i32 = 10;

/// How much CPU priority background indexing gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexPriority {
    /// Below interactive work (nice 10).
    #[default]
    Low,
    /// Like any other thread of the process.
    Normal,
}

/// Lowers the calling thread (and every thread it creates from now on) to
/// [`BACKGROUND_NICE`]. A thread that is already lower stays as it is; lowering never needs a
/// privilege. Elsewhere than Linux this does nothing.
pub fn lower_current_thread() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let current = current_thread_nice()?;
        if current >= BACKGROUND_NICE {
            return Ok(());
        }
        // SAFETY: plain system calls on the calling thread's own id.
        #[allow(unsafe_code)]
        let done = unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE)
        };
        if done != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The calling thread's nice value (0 elsewhere than Linux).
pub fn current_thread_nice() -> std::io::Result<i32> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system calls; errno is cleared first because -1 is a valid result.
        #[allow(unsafe_code)]
        let (nice, errno) = unsafe {
            *libc::__errno_location() = 0;
            let nice = libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t);
            (nice, *libc::__errno_location())
        };
        if errno != 0 {
            return Err(std::io::Error::from_raw_os_error(errno));
        }
        Ok(nice)
    }
    #[cfg(not(target_os = "linux"))]
    Ok(0)
}

/// Runs `work` on a new thread lowered to [`BACKGROUND_NICE`] and returns its result: whatever
/// threads `work` starts (an inference session's pool) keep the low priority, while the caller
/// keeps its own.
pub fn on_lowered_thread<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    let work = std::sync::Mutex::new(Some(work));
    let run = || work.lock().ok().and_then(|mut w| w.take()).map(|w| w());
    std::thread::scope(|scope| {
        // Threads the work starts inherit this name too, so they are easy to tell in `top -H`.
        let spawned = std::thread::Builder::new().name("raggrep-embed".into()).spawn_scoped(scope, || {
            if let Err(err) = lower_current_thread() {
                tracing::warn!("cannot lower the priority of background work: {err}");
            }
            run()
        });
        match spawned.map(|handle| handle.join()) {
            Ok(Ok(Some(value))) => value,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            // No thread to be had: do the work here, at the caller's priority.
            Ok(Ok(None)) | Err(_) => {
                tracing::warn!("cannot start a background thread; embedding at normal priority");
                match run() {
                    Some(value) => value,
                    None => unreachable!("the work runs once, and only here when the thread never ran it"),
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowering_is_per_thread_and_inherited() {
        let before = current_thread_nice().unwrap();
        let (inside, child) = on_lowered_thread(|| {
            let child = std::thread::spawn(|| current_thread_nice().unwrap()).join().unwrap();
            (current_thread_nice().unwrap(), child)
        });
        if cfg!(target_os = "linux") {
            assert_eq!(inside, BACKGROUND_NICE.max(before));
            assert_eq!(child, inside, "threads created by a lowered thread are lowered too");
        }
        assert_eq!(current_thread_nice().unwrap(), before, "the caller keeps its priority");
    }
}
