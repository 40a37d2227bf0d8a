//! `workspace/executeCommand`: the `raggrep.*` commands. Each answers with a type of
//! [`crate::wire`], the contract the CLI's JSON and the MCP tools share.

use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::*;

use super::{Backend, COMMANDS, file_path, invalid, to_proto};
use crate::engine::{Mode, Query, SearchRequest};
use crate::wire;

/// 1-based inclusive lines of an LSP range (an end at column 0 does not include that line).
fn lines_of(range: &Range) -> (u32, u32) {
    let start = range.start.line + 1;
    let end =
        if range.end.character == 0 && range.end.line > range.start.line { range.end.line } else { range.end.line + 1 };
    (start, end.max(start))
}

#[derive(serde::Deserialize)]
struct SearchArgs {
    query: String,
    k: Option<usize>,
    mode: Option<String>,
    path: Option<String>,
    lang: Option<String>,
    rerank: Option<bool>,
}

#[derive(serde::Deserialize)]
struct SimilarArgs {
    uri: Uri,
    range: Range,
    k: Option<usize>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContextArgs {
    query: String,
    max_tokens: Option<usize>,
}

#[derive(serde::Deserialize, Default)]
struct HistoryArgs {
    query: Option<String>,
    path: Option<String>,
    symbol: Option<String>,
    k: Option<usize>,
    /// A file: its history (with `line`, 0-based as LSP counts: the definition around it).
    uri: Option<Uri>,
    line: Option<u32>,
}

#[derive(serde::Deserialize, Default)]
struct ToggleArgs {
    enabled: Option<bool>,
    uri: Option<Uri>,
}

fn parse_args<T: serde::de::DeserializeOwned>(command: &str, arguments: &[Value]) -> Result<T> {
    let first = arguments.first().cloned().unwrap_or(Value::Null);
    serde_json::from_value(first).map_err(|e| invalid(format!("{command}: invalid arguments: {e}")))
}

pub(super) async fn execute_command(backend: &Backend, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
    backend.wait_for_roots().await;
    let command = params.command.as_str();
    let args = params.arguments;
    let default_k = backend.state.settings.lock().map(|s| s.default_k).unwrap_or(10);
    match command {
        "raggrep.search" => {
            let a: SearchArgs = parse_args(command, &args)?;
            let mode = a.mode.as_deref().map(crate::engine::mode).transpose().map_err(|e| invalid(e.to_string()))?;
            let request = SearchRequest {
                mode: mode.unwrap_or(Mode::Hybrid),
                lang: a.lang,
                path: a.path,
                rerank: a.rerank.unwrap_or(false),
                ..SearchRequest::new(a.query.clone(), a.k.unwrap_or(default_k))
            };
            // An editor asks as the user types: an empty text is answered (with nothing), not refused.
            let query = Query { text: a.query.clone(), ..request.template().map_err(|e| invalid(e.to_string()))? };
            let started = std::time::Instant::now();
            let state = backend.state.clone();
            let (found, partial, degraded, team) = backend
                .blocking(move |ws| {
                    let found = ws.find(&query)?;
                    let team = super::team::section(&state.team, &ws, &query);
                    Ok((found, ws.is_partial(), ws.degraded(query.mode), team))
                })
                .await?;
            reply(wire::SearchResponse {
                query: a.query,
                took_ms: started.elapsed().as_secs_f64() * 1000.0,
                partial,
                degraded,
                results: found.hits.iter().map(to_proto::hit).collect(),
                budget: None,
                k_capped: None,
                reranked_by: found.reranked_by,
                confidence: found.confidence.map(wire::Confidence::from),
                team,
                root: None,
            })
        }
        "raggrep.findSimilar" => {
            let a: SimilarArgs = parse_args(command, &args)?;
            let path = file_path(&a.uri)?;
            let (start, end) = lines_of(&a.range);
            let k = a.k.unwrap_or(default_k);
            let (hits, (from, to), relative, partial, degraded) = backend
                .blocking(move |ws| {
                    let (hits, lines) = ws.find_similar(&path, start, end, k)?;
                    let relative = ws.locate(&path).map(|(_, rel)| rel).unwrap_or_default();
                    Ok((hits, lines, relative, ws.is_partial(), ws.degraded(Mode::Dense)))
                })
                .await?;
            let mut source = wire::Source::lines(&relative, from, to);
            source.uri = Some(a.uri.as_str().to_string());
            source.range = Some(wire::LineRange::whole_lines(from, to));
            reply(wire::SimilarResponse {
                source,
                partial,
                degraded,
                results: hits.iter().map(to_proto::hit).collect(),
                budget: None,
            })
        }
        "raggrep.context" => {
            let a: ContextArgs = parse_args(command, &args)?;
            let max_tokens = a.max_tokens.unwrap_or(2000);
            let (context, partial, degraded) = backend
                .blocking(move |ws| Ok((ws.context(&a.query, max_tokens)?, ws.is_partial(), ws.degraded(Mode::Hybrid))))
                .await?;
            reply(wire::ContextResponse::new(context, partial, degraded))
        }
        "raggrep.history" => {
            let a: HistoryArgs = if args.is_empty() { HistoryArgs::default() } else { parse_args(command, &args)? };
            let file = a.uri.as_ref().map(file_path).transpose()?;
            let k = a.k.unwrap_or(default_k).clamp(1, 100);
            let state = backend.state.clone();
            let answer = backend
                .blocking(move |ws| {
                    let line = a.line.map(|l| l + 1);
                    let scope = ws
                        .history_scope(file.as_deref(), line, a.path.as_deref())
                        .ok_or_else(|| anyhow::anyhow!("the file is in no workspace folder raggrep serves"))?;
                    let symbol = a.symbol.or(scope.symbol);
                    let query = crate::engine::HistoryQuery { text: a.query, path: scope.path, symbol, k };
                    let model = state.history_model.get_or_init(|| crate::vectordb::StoreModel::new(None, None));
                    let answer = crate::engine::history::search_history(
                        &scope.location,
                        model,
                        &query,
                        crate::audit::Door::Lsp,
                        &mut |_| {},
                    )?;
                    Ok(answer.response)
                })
                .await?;
            reply(answer)
        }
        "raggrep.reindex" => {
            let workspace = backend.workspace()?;
            workspace.reindex();
            reply(wire::Queued { queued: workspace.roots().len() })
        }
        "raggrep.status" => {
            let statuses = backend.blocking(|ws| Ok(ws.status())).await?;
            reply(wire::StatusResponse::new(statuses))
        }
        "raggrep.toggle" => {
            let a: ToggleArgs = if args.is_empty() { ToggleArgs::default() } else { parse_args(command, &args)? };
            let workspace = backend.workspace()?;
            let roots = match &a.uri {
                Some(uri) => {
                    let path = file_path(uri)?;
                    workspace.locate(&path).map(|(root, _)| vec![root]).unwrap_or_default()
                }
                None => workspace.roots(),
            };
            let mut result = Vec::new();
            for root in roots {
                let enabled = a.enabled.unwrap_or(!workspace.is_enabled(&root));
                workspace.set_enabled(&root, enabled).map_err(|e| invalid(e.to_string()))?;
                result.push(wire::RootEnabled { root: root.display().to_string(), enabled });
            }
            reply(wire::Toggled { roots: result })
        }
        "raggrep.pause" | "raggrep.resume" => {
            let workspace = backend.workspace()?;
            if command == "raggrep.pause" {
                workspace.pause();
            } else {
                workspace.resume();
            }
            reply(wire::Paused { paused: workspace.is_paused() })
        }
        other => Err(invalid(format!("unknown command {other:?}; raggrep knows {}", COMMANDS.join(", ")))),
    }
}

/// A command's answer: one of the wire types, as JSON.
fn reply(value: impl serde::Serialize) -> Result<Option<LSPAny>> {
    serde_json::to_value(value).map(Some).map_err(|err| Error {
        code: ErrorCode::InternalError,
        message: format!("cannot encode the answer: {err}").into(),
        data: None,
    })
}
