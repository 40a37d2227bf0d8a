//! A client for OpenAI-compatible chat completions (`POST …/v1/chat/completions`), the API that
//! llama.cpp's server, Ollama, vLLM and LM Studio all serve. Streams the answer (server-sent
//! events) as it arrives. Plain HTTP only: these servers run on the user's machine or network;
//! nothing is sent anywhere the user did not configure.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use serde_json::{Value, json};

/// Where llama.cpp's `llama-server` listens by default: loopback, so an unconfigured `ask`
/// never leaves the machine.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080/v1";

/// How to reach the model.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// Base URL (`http://host:port/v1`), or the full chat-completions URL.
    pub url: String,
    /// The model to ask for; `None` takes the first the server lists (`GET …/models`).
    pub model: Option<String>,
    /// Sent as a bearer token when set. Never logged.
    pub api_key: Option<String>,
    /// The environment variable the key comes from, for messages.
    pub api_key_env: String,
    /// Longest wait for the connection and between two pieces of the answer.
    pub timeout: Duration,
    /// Most tokens the answer may have.
    pub max_tokens: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("{0}")]
    BadUrl(String),
    #[error(
        "no LLM server answers at {url} ({reason}): start one (llama-server -m MODEL.gguf, ollama serve, …) and point --llm-url at it, or print the prompt with --prompt and paste it anywhere"
    )]
    Unreachable { url: String, reason: String },
    #[error("the LLM server at {url} answered {status}: {message}")]
    Status { url: String, status: String, message: String },
    #[error("the LLM server at {url} sent nothing for {seconds} s (--llm-timeout)")]
    Timeout { url: String, seconds: u64 },
    #[error("the LLM server at {url} stopped mid-answer ({reason})")]
    Interrupted { url: String, reason: String },
    #[error("the LLM server at {url} sent an answer raggrep cannot read: {message}")]
    Protocol { url: String, message: String },
}

/// A parsed `http://` URL: where to connect and which paths to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    host: String,
    port: u16,
    /// `host:port` as the Host header carries it.
    authority: String,
    chat_path: String,
    models_path: String,
}

impl Endpoint {
    /// Accepts `http://host:port`, `http://host:port/v1` or the full `…/chat/completions` URL.
    pub fn parse(url: &str) -> Result<Endpoint, LlmError> {
        let bad = |why: &str| LlmError::BadUrl(format!("--llm-url {url:?}: {why}"));
        let Some(rest) = url.trim().strip_prefix("http://") else {
            if url.trim().starts_with("https://") {
                return Err(bad(
                    "https is not supported: raggrep talks plain HTTP to a server on this machine or network (for a remote API, run a local proxy)",
                ));
            }
            return Err(bad("give an http:// URL, e.g. http://127.0.0.1:8080/v1"));
        };
        let (authority, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash..]),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err(bad("credentials in the URL are refused: set the API key in an environment variable"));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
                (host, port.parse::<u16>().map_err(|_| bad("the port is not a number from 1 to 65535"))?)
            }
            _ => (authority, 80),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || port == 0 {
            return Err(bad("no host"));
        }
        let path = path.trim_end_matches('/');
        let base = if let Some(base) = path.strip_suffix("/chat/completions") {
            base.to_string()
        } else if path.is_empty() {
            "/v1".to_string()
        } else {
            path.to_string()
        };
        Ok(Endpoint {
            host: host.to_string(),
            port,
            authority: authority.to_string(),
            chat_path: format!("{base}/chat/completions"),
            models_path: format!("{base}/models"),
        })
    }

    /// The chat-completions URL, for messages.
    pub fn chat_url(&self) -> String {
        format!("http://{}{}", self.authority, self.chat_path)
    }
}

/// The answer, once complete.
#[derive(Debug, Clone, Default)]
pub struct Completion {
    pub text: String,
    /// The model that answered (as the server names it).
    pub model: String,
    /// From sending the request to the first piece of the answer.
    pub first_token_ms: Option<f64>,
    /// `stop`, `length` …, as the server says.
    pub finish_reason: Option<String>,
}

/// One thing a streamed answer said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Text(String),
    Model(String),
    Finish(String),
    Error(String),
    Done,
}

/// Splits a server-sent-event stream into [`Event`]s, across reads that cut lines anywhere.
#[derive(Debug, Default)]
pub struct SseParser {
    pending: Vec<u8>,
}

impl SseParser {
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\r', '\n']);
            if let Some(error) = line.strip_prefix("error:") {
                // llama.cpp's server reports a failure mid-stream on a line of its own.
                let error = error.trim();
                let message = serde_json::from_str::<Value>(error)
                    .ok()
                    .and_then(|v| {
                        v.get("message")
                            .or_else(|| v.get("error")?.get("message"))
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .unwrap_or_else(|| error.to_string());
                events.push(Event::Error(message));
                continue;
            }
            let Some(data) = line.strip_prefix("data:") else { continue };
            let data = data.trim();
            if data == "[DONE]" {
                events.push(Event::Done);
                continue;
            }
            match serde_json::from_str::<Value>(data) {
                Ok(value) => events.extend(chunk_events(&value)),
                Err(err) => events.push(Event::Error(format!("an event is not JSON ({err})"))),
            }
        }
        events
    }
}

/// The events of one streamed chunk (`choices[0].delta`) or of a whole answer
/// (`choices[0].message`, from a server that does not stream).
fn chunk_events(value: &Value) -> Vec<Event> {
    let mut events = Vec::new();
    if let Some(error) = value.get("error") {
        let message = error.get("message").and_then(Value::as_str).map_or_else(|| error.to_string(), str::to_string);
        events.push(Event::Error(message));
        return events;
    }
    if let Some(model) = value.get("model").and_then(Value::as_str) {
        events.push(Event::Model(model.to_string()));
    }
    if let Some(choice) = value.get("choices").and_then(|c| c.get(0)) {
        let part = choice.get("delta").or_else(|| choice.get("message"));
        if let Some(text) = part.and_then(|p| p.get("content")).and_then(Value::as_str)
            && !text.is_empty()
        {
            events.push(Event::Text(text.to_string()));
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            events.push(Event::Finish(reason.to_string()));
        }
    }
    events
}

/// Sends `prompt` as one user message and streams the answer to `on_text`.
pub async fn complete(config: &LlmConfig, prompt: &str, on_text: &mut dyn FnMut(&str)) -> Result<Completion, LlmError> {
    let endpoint = Endpoint::parse(&config.url)?;
    let url = endpoint.chat_url();
    let model = match &config.model {
        Some(model) => model.clone(),
        None => first_model(config, &endpoint).await?,
    };
    let body = json!({
        "model": model,
        "messages": [{ "role": "user", "content": prompt }],
        "stream": true,
        "max_tokens": config.max_tokens,
        // Answers grounded in snippets, not creative writing.
        "temperature": 0.2,
    });
    let started = Instant::now();
    let response = send(config, &endpoint, Method::POST, &endpoint.chat_path, Some(body.to_string())).await?;
    let status = response.status();
    let mut body = response.into_body();
    if !status.is_success() {
        let text = read_all(config, &url, &mut body).await.unwrap_or_default();
        return Err(status_error(config, &url, status, &text));
    }
    let mut completion = Completion { model, ..Completion::default() };
    let mut parser = SseParser::default();
    let mut raw = Vec::new();
    let mut streamed = false;
    let mut finished = false;
    loop {
        let frame = match tokio::time::timeout(config.timeout, body.frame()).await {
            Err(_) => return Err(LlmError::Timeout { url, seconds: config.timeout.as_secs() }),
            Ok(None) => break,
            Ok(Some(Err(err))) => return Err(LlmError::Interrupted { url, reason: err.to_string() }),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else { continue };
        if raw.len() < 1 << 20 {
            raw.extend_from_slice(&data);
        }
        let mut done = false;
        for event in parser.push(&data) {
            streamed = true;
            match event {
                Event::Text(text) => {
                    completion.first_token_ms.get_or_insert_with(|| started.elapsed().as_secs_f64() * 1000.0);
                    on_text(&text);
                    completion.text.push_str(&text);
                }
                Event::Model(name) => completion.model = name,
                Event::Finish(reason) => completion.finish_reason = Some(reason),
                Event::Error(message) => return Err(LlmError::Protocol { url, message }),
                Event::Done => done = true,
            }
        }
        if done {
            finished = true;
            break;
        }
    }
    if streamed && !finished && completion.finish_reason.is_none() {
        // The connection closed mid-answer (server stopped or crashed): say so rather than pass
        // a truncated answer off as whole.
        return Err(LlmError::Interrupted { url, reason: "connection closed".into() });
    }
    if !streamed {
        // A server that ignored `stream` and sent the whole answer as one JSON object.
        let value: Value = serde_json::from_slice(&raw)
            .map_err(|e| LlmError::Protocol { url: url.clone(), message: format!("neither events nor JSON ({e})") })?;
        for event in chunk_events(&value) {
            match event {
                Event::Text(text) => {
                    on_text(&text);
                    completion.text.push_str(&text);
                }
                Event::Model(name) => completion.model = name,
                Event::Finish(reason) => completion.finish_reason = Some(reason),
                Event::Error(message) => return Err(LlmError::Protocol { url, message }),
                Event::Done => {}
            }
        }
    }
    Ok(completion)
}

/// The first model the server lists; servers that serve one model (llama.cpp's) accept any
/// name, so a server without the list gets `default`.
async fn first_model(config: &LlmConfig, endpoint: &Endpoint) -> Result<String, LlmError> {
    let url = format!("http://{}{}", endpoint.authority, endpoint.models_path);
    let response = send(config, endpoint, Method::GET, &endpoint.models_path, None).await?;
    let status = response.status();
    let mut body = response.into_body();
    let text = read_all(config, &url, &mut body).await?;
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        return Err(status_error(config, &url, status, &text));
    }
    let listed = serde_json::from_str::<Value>(&text).ok().and_then(|v| {
        v.get("data")?.as_array()?.iter().find_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
    });
    Ok(listed.unwrap_or_else(|| "default".to_string()))
}

async fn send(
    config: &LlmConfig,
    endpoint: &Endpoint,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Result<hyper::Response<hyper::body::Incoming>, LlmError> {
    let url = format!("http://{}{}", endpoint.authority, path);
    let unreachable = |reason: String| LlmError::Unreachable { url: url.clone(), reason };
    let connect = tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port));
    let stream = match tokio::time::timeout(config.timeout, connect).await {
        Err(_) => return Err(unreachable(format!("no connection within {} s", config.timeout.as_secs()))),
        Ok(Err(err)) => return Err(unreachable(io_reason(&err))),
        Ok(Ok(stream)) => stream,
    };
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(io).await.map_err(|e| unreachable(e.to_string()))?;
    tokio::spawn(async move {
        // Ends when the response is read or dropped; its errors surface through the response.
        let _ = connection.await;
    });
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, &endpoint.authority)
        .header(hyper::header::ACCEPT, "text/event-stream, application/json")
        .header(hyper::header::USER_AGENT, concat!("raggrep/", env!("CARGO_PKG_VERSION")));
    if body.is_some() {
        request = request.header(hyper::header::CONTENT_TYPE, "application/json");
    }
    if let Some(key) = &config.api_key {
        request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {key}"));
    }
    let request = request
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| LlmError::BadUrl(format!("--llm-url {url:?}: {e}")))?;
    match tokio::time::timeout(config.timeout, sender.send_request(request)).await {
        Err(_) => Err(LlmError::Timeout { url, seconds: config.timeout.as_secs() }),
        Ok(Err(err)) => Err(unreachable(err.to_string())),
        Ok(Ok(response)) => Ok(response),
    }
}

fn io_reason(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
        _ => err.to_string(),
    }
}

/// A whole (small) response body as text, at most 1 MiB.
async fn read_all(config: &LlmConfig, url: &str, body: &mut hyper::body::Incoming) -> Result<String, LlmError> {
    let mut bytes = Vec::new();
    loop {
        match tokio::time::timeout(config.timeout, body.frame()).await {
            Err(_) => return Err(LlmError::Timeout { url: url.to_string(), seconds: config.timeout.as_secs() }),
            Ok(None) => break,
            Ok(Some(Err(err))) => return Err(LlmError::Protocol { url: url.to_string(), message: err.to_string() }),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data()
                    && bytes.len() < 1 << 20
                {
                    bytes.extend_from_slice(&data);
                }
            }
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// An HTTP failure in one line: the server's own error message when it sent one.
fn status_error(config: &LlmConfig, url: &str, status: StatusCode, body: &str) -> LlmError {
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            let error = v.get("error")?;
            Some(error.get("message").and_then(Value::as_str).map_or_else(|| error.to_string(), str::to_string))
        })
        .unwrap_or_else(|| body.lines().next().unwrap_or_default().chars().take(200).collect());
    let hint = match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN if config.api_key.is_none() => {
            format!(" (set the API key in {})", config.api_key_env)
        }
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => format!(" (the key in {} was refused)", config.api_key_env),
        StatusCode::NOT_FOUND => {
            " (is --llm-url the server's OpenAI-compatible base, e.g. http://host:port/v1?)".to_string()
        }
        _ => String::new(),
    };
    LlmError::Status { url: url.to_string(), status: status.to_string(), message: format!("{message}{hint}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_the_chat_and_models_paths() {
        let e = Endpoint::parse("http://127.0.0.1:8080/v1").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((e.host.as_str(), e.port), ("127.0.0.1", 8080));
        assert_eq!(e.chat_path, "/v1/chat/completions");
        assert_eq!(e.models_path, "/v1/models");
        let e = Endpoint::parse("http://localhost:11434").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.chat_url(), "http://localhost:11434/v1/chat/completions");
        let e = Endpoint::parse("http://[::1]:9000/api/v1/chat/completions/").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((e.host.as_str(), e.port, e.models_path.as_str()), ("::1", 9000, "/api/v1/models"));
        let e = Endpoint::parse("http://llm.internal/v1").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.port, 80);
        for bad in ["https://api.example/v1", "127.0.0.1:8080", "http://:80/v1", "http://u:p@host/v1", "http://h:x/v1"]
        {
            assert!(matches!(Endpoint::parse(bad), Err(LlmError::BadUrl(_))), "{bad}");
        }
    }

    #[test]
    fn events_survive_reads_cut_anywhere() {
        let stream = concat!(
            "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n",
            ": keep-alive comment\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"lo ü\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        for cut in [1, 2, 7, 64, stream.len()] {
            let mut parser = SseParser::default();
            let mut events = Vec::new();
            for piece in stream.as_bytes().chunks(cut) {
                events.extend(parser.push(piece));
            }
            let text: String =
                events.iter().filter_map(|e| if let Event::Text(t) = e { Some(t.as_str()) } else { None }).collect();
            assert_eq!(text, "Hello ü", "cut {cut}");
            assert!(events.contains(&Event::Model("m".into())));
            assert!(events.contains(&Event::Finish("stop".into())));
            assert_eq!(events.last(), Some(&Event::Done));
        }
    }

    #[test]
    fn an_error_event_is_an_error() {
        let events = SseParser::default().push(b"data: {\"error\":{\"message\":\"context too long\"}}\n");
        assert_eq!(events, vec![Event::Error("context too long".into())]);
        let events = SseParser::default().push(b"error: {\"code\":500,\"message\":\"slot unavailable\"}\n");
        assert_eq!(events, vec![Event::Error("slot unavailable".into())]);
    }
}
