//! Process plumbing shared by the protocol front doors (`lsp`, `mcp`), which speak on stdout.

/// Keeps the protocol channel clean: the real stdout becomes a private handle for JSON-RPC, and
/// file descriptor 1 is pointed at stderr, so a stray print from any library (hnsw_rs has some)
/// cannot corrupt the stream.
pub fn protect_stdout() -> std::io::Result<tokio::fs::File> {
    use std::os::fd::FromRawFd;
    #[allow(unsafe_code)]
    // SAFETY: plain descriptor duplication at start-up, before any other thread writes to them;
    // the duplicate is owned by the returned File alone.
    unsafe {
        let fd = libc::dup(1);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::dup2(2, 1) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(tokio::fs::File::from_std(std::fs::File::from_raw_fd(fd)))
    }
}
