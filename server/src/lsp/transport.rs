//! The transport: stdin re-framed into well-formed messages, the tower-lsp server loop, the
//! event and log pumps, and the process exit.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::FutureExt;
use tokio::sync::mpsc::unbounded_channel;
use tower_lsp_server::ls_types::MessageType;
use tower_lsp_server::{LspService, Server};

use super::progress::forward_events;
use super::{Backend, framing, log};

/// Runs the server on stdin/stdout until `exit`. Returns the process exit code.
pub fn run() -> i32 {
    let protocol_out = match crate::stdio::protect_stdout() {
        Ok(out) => out,
        Err(err) => {
            tracing::error!("cannot set up stdout: {err}");
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            tracing::error!("cannot start the async runtime: {err}");
            return 2;
        }
    };
    let orderly = runtime.block_on(async move {
        let (log_tx, mut log_rx) = unbounded_channel::<(MessageType, String)>();
        let sink = log::init(log_tx);
        let (events_tx, events_rx) = unbounded_channel();
        let (service, socket) = LspService::build(|client| Backend::new(client, events_tx, Arc::clone(&sink)))
            .custom_method("raggrep/malformedMessage", Backend::malformed)
            .finish();
        let server_state = Arc::clone(&service.inner().state);
        let events_client = service.inner().client.clone();
        let events_state = Arc::clone(&server_state);
        tokio::spawn(async move {
            let mut events_rx = events_rx;
            // A panic while forwarding one event must not silence every later one.
            while std::panic::AssertUnwindSafe(forward_events(
                events_client.clone(),
                &mut events_rx,
                Arc::clone(&events_state),
            ))
            .catch_unwind()
            .await
            .is_err()
            {
                tracing::error!("forwarding indexing events panicked; continuing with the next event");
            }
        });
        let log_client = service.inner().client.clone();
        tokio::spawn(async move {
            while let Some((kind, message)) = log_rx.recv().await {
                log_client.log_message(kind, message).await;
            }
        });
        let (input, clean) = tokio::io::duplex(1 << 20);
        let eof_state = Arc::clone(&server_state);
        tokio::spawn(async move {
            sanitize_input(tokio::io::stdin(), input).await;
            // The client is gone (an editor that crashed or was killed). Normally the server
            // loop ends now; a handler still waiting for a reply from the client would keep it
            // running for ever, an orphan holding the model in memory. Leave shortly after.
            tokio::time::sleep(STDIN_CLOSED_GRACE).await;
            tracing::info!("stdin closed and the server did not stop by itself; exiting");
            leave_now(if eof_state.shutdown_requested.load(Ordering::Acquire) { 0 } else { 1 });
        });
        Server::new(clean, protocol_out, socket).serve(service).await;
        server_state.shutdown_requested.load(Ordering::Acquire)
    });
    // Reading stdin occupies a blocking thread that never returns on its own; waiting for it
    // would hang the exit.
    runtime.shutdown_background();
    // The specification: `exit` without a `shutdown` before it ends the process with code 1.
    let code = if orderly { 0 } else { 1 };
    leave_now(code)
}

/// How long the server may take to stop by itself once stdin is closed.
const STDIN_CLOSED_GRACE: Duration = Duration::from_secs(2);
/// How long after `shutdown` the process ends even if `exit` is never processed: the server
/// loop stops reading at `exit` but waits for handlers in flight, and one waiting for a reply
/// from the client (a consent question sent just before) would never finish.
pub(super) const EXIT_DEADLINE: Duration = Duration::from_secs(10);

/// Ends the process without running exit-time destructors. The indexer may still be finishing
/// its last publish on another thread (`shutdown` stops waiting after a grace period), and
/// tearing down ONNX Runtime's globals under it made the process hang or crash at exit (seen
/// once in a dozen quick shutdown/exit runs). Nothing is lost: every protocol message was
/// written and flushed by the server loop, and the index is durable after each publish.
pub(super) fn leave_now(code: i32) -> i32 {
    use std::io::Write;
    let _ = std::io::stderr().flush();
    #[allow(unsafe_code)]
    // SAFETY: `_exit` takes no pointers and does not return; it only skips atexit handlers.
    unsafe {
        libc::_exit(code)
    }
}

/// Forwards stdin to the framework as well-formed frames only: it stops reading after a body it
/// cannot decode, and one bad message, or one wrong Content-Length, must not end the session.
/// The rules are in [`framing`].
async fn sanitize_input(mut input: tokio::io::Stdin, mut output: tokio::io::DuplexStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut framer = framing::Framer::default();
    let mut buf = vec![0; 64 << 10];
    loop {
        let read = match input.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        for frame in framer.push(&buf[..read]) {
            if output.write_all(&frame).await.is_err() {
                return;
            }
        }
    }
}
