//! `raggrep mcp --http ADDR`: the same tools over Streamable HTTP, for hosts that connect to a
//! URL instead of starting a process. Loopback only: the server reads the user's code and has no
//! authentication, so it must not be reachable from other machines, and requests that carry a
//! browser `Origin` are refused (a web page must not be able to drive it).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::RaggrepMcp;

/// The one path the endpoint answers on (the convention of MCP hosts' examples).
pub const ENDPOINT: &str = "/mcp";

/// The header that names a session (Streamable HTTP transport).
const SESSION_HEADER: &str = "mcp-session-id";

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// Refuses addresses other hosts could reach.
pub fn check_loopback(addr: &SocketAddr) -> Result<(), String> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(format!(
            "--http {addr}: raggrep serves MCP over HTTP on loopback only (127.0.0.1 or [::1]); it has no authentication"
        ))
    }
}

/// Serves until `stop` is cancelled (SIGINT/SIGTERM in `run`), each session with a copy of
/// `server` (they share its workspace and models). `ready` receives the bound address (useful
/// with port 0).
pub async fn serve(
    server: RaggrepMcp,
    addr: SocketAddr,
    stop: CancellationToken,
    ready: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1", "[::1]"])
        .enforce_origin_validation()
        .with_cancellation_token(stop.child_token());
    let sessions = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    ready(bound);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    // Out of file descriptors and the like: keep serving the connections we have.
                    tracing::warn!("accept failed: {err}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = stop.cancelled() => return Ok(()),
        };
        let service = service.clone();
        let sessions = sessions.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                let service = service.clone();
                let sessions = sessions.clone();
                async move {
                    if request.uri().path() != ENDPOINT {
                        return Ok::<_, Infallible>(not_found(request.uri().path()));
                    }
                    if request.method() == Method::DELETE {
                        return Ok(end_session(request, &service, &sessions).await);
                    }
                    Ok(service.handle(request).await)
                }
            });
            let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), handler);
            tokio::select! {
                served = connection => {
                    if let Err(err) = served {
                        tracing::debug!("connection from {peer}: {err}");
                    }
                }
                () = stop.cancelled() => {}
            }
        });
    }
}

/// `DELETE /mcp`: a client ending its session. The transport specification's answers, which
/// the official SDKs check: 200 when the session existed and is now closed (rmcp says 202,
/// which the Python SDK reports as "Session termination failed: 202" on every exit), 404 for a
/// session that is unknown or already ended. A request without a session id, or with a bad
/// protocol version, gets rmcp's own 400.
async fn end_session(
    request: Request<Incoming>,
    service: &StreamableHttpService<RaggrepMcp, LocalSessionManager>,
    sessions: &LocalSessionManager,
) -> Response<Body> {
    if let Some(id) = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
        let id: rmcp::transport::streamable_http_server::SessionId = id.into();
        // `has_session` cannot fail for the in-memory manager; an error would mean "unknown".
        if !sessions.has_session(&id).await.unwrap_or(false) {
            return plain(StatusCode::NOT_FOUND, "no such session (unknown, or already ended)\n");
        }
    }
    let mut response = service.handle(request).await;
    if response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

fn not_found(path: &str) -> Response<Body> {
    plain(StatusCode::NOT_FOUND, &format!("raggrep serves MCP on {ENDPOINT}, not on {path}\n"))
}

fn plain(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(http_body_util::Full::new(Bytes::from(body.to_owned())).boxed());
    *response.status_mut() = status;
    response
}
