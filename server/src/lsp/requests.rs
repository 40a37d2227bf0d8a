//! Requests other than commands: `workspace/symbol` (search results as symbols) and
//! `textDocument/codeAction` (Find similar code for the selection or the unit under the cursor, and
//! the history of the code there).

use serde_json::json;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

use super::{Backend, file_path, to_proto};
use crate::engine::Query;

pub(super) async fn symbol(
    backend: &Backend,
    params: WorkspaceSymbolParams,
) -> Result<Option<WorkspaceSymbolResponse>> {
    if params.query.trim().is_empty() {
        return Ok(Some(WorkspaceSymbolResponse::Flat(Vec::new())));
    }
    let k = backend.state.settings.lock().map(|s| s.default_k).unwrap_or(10).max(20);
    let hits = backend.blocking(move |ws| Ok(ws.search(&Query { k, ..Query::new(params.query) })?)).await?;
    Ok(Some(WorkspaceSymbolResponse::Flat(hits.iter().filter_map(to_proto::symbol_information).collect())))
}

pub(super) async fn code_action(backend: &Backend, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
    let path = file_path(&params.text_document.uri)?;
    let mut range = params.range;
    // No selection, or part of one line (Helix's cursor is a one-character selection): the
    // enclosing indexed unit (function, method, …) under the cursor.
    let cursor_line = (range.start.line == range.end.line).then_some(range.start.line + 1);
    let located = backend
        .blocking(move |ws| {
            let Some((_, rel)) = ws.locate(&path) else { return Ok(None) };
            Ok(Some(cursor_line.and_then(|line| ws.enclosing_chunk(&path, &rel, line))))
        })
        .await?;
    // Files outside every indexed root (the editor's own settings, say) get no action.
    let Some(unit) = located else { return Ok(None) };
    if let Some((start, end)) = unit {
        range = to_proto::line_range(start, end);
    }
    // The history of the definition around the cursor (the selection's first line): second, so
    // an editor's first choice stays "Find similar code".
    let line = params.range.start.line;
    let history_args = json!({ "uri": params.text_document.uri, "line": line });
    let args = json!({ "uri": params.text_document.uri, "range": range });
    let action = CodeAction {
        title: "Find similar code".into(),
        kind: Some(CodeActionKind::new("refactor.raggrep.findSimilar")),
        command: Some(Command {
            title: "Find similar code".into(),
            command: "raggrep.findSimilar".into(),
            arguments: Some(vec![args]),
        }),
        ..CodeAction::default()
    };
    let history = CodeAction {
        title: "Show history of this code".into(),
        kind: Some(CodeActionKind::new("refactor.raggrep.history")),
        command: Some(Command {
            title: "Show history of this code".into(),
            command: "raggrep.history".into(),
            arguments: Some(vec![history_args]),
        }),
        ..CodeAction::default()
    };
    Ok(Some(vec![CodeActionOrCommand::CodeAction(action), CodeActionOrCommand::CodeAction(history)]))
}
