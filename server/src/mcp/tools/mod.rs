//! The MCP tools, one file each (ruff_server style): each file holds its arguments (their
//! JSON Schema is what an agent reads) and its `#[tool_router]`; [`RaggrepMcp::tools`] joins
//! the routers.

mod context;
mod find_similar;
mod find_symbol;
mod history;
mod index;
mod outline;
mod search;
mod vector_db;

use super::*;

impl RaggrepMcp {
    /// Every tool's route.
    pub(super) fn tools() -> ToolRouter<RaggrepMcp> {
        Self::search_router()
            + Self::find_similar_router()
            + Self::context_router()
            + Self::outline_router()
            + Self::find_symbol_router()
            + Self::index_router()
            + Self::vector_db_router()
            + Self::history_router()
    }
}

/// `k` from the model: 0 is refused, anything above [`MAX_K`] is capped (and said so).
pub(super) fn check_k(k: Option<u64>) -> Result<(usize, Option<u64>), String> {
    match k {
        Some(0) => Err("k must be at least 1".into()),
        Some(k) if k > MAX_K => Ok((MAX_K as usize, Some(k))),
        Some(k) => Ok((k as usize, None)),
        None => Ok((DEFAULT_K as usize, None)),
    }
}

pub(super) fn check_budget(max_tokens: Option<u64>) -> Result<usize, String> {
    match max_tokens {
        Some(0) => Err("max_tokens must be at least 1".into()),
        Some(t) => Ok(t.min(MAX_MAX_TOKENS) as usize),
        None => Ok(DEFAULT_MAX_TOKENS as usize),
    }
}

/// Hits as the model sees them, added while the response stays within `budget` tokens
/// (`overhead`: the tokens of the rest of the response).
pub(super) fn budgeted_hits(
    workspace: &Workspace,
    hits: &[RootHit],
    budget: usize,
    overhead: usize,
) -> (Vec<wire::Hit>, wire::Budget) {
    let several_roots = workspace.roots().len() > 1;
    let values = hits.iter().map(|hit| {
        let mut value = wire::Hit::new(hit, several_roots).for_model();
        value.stale = Some(workspace.is_stale(hit));
        value
    });
    let (out, tokens) = within_budget(values, budget, overhead);
    let omitted = hits.len() - out.len();
    (out, wire::Budget { tokens, omitted })
}

/// The first `items` whose JSON fits, with `overhead` tokens, within `budget` estimated tokens,
/// and the tokens they come to (the rest is left out: a response is cut, never overrun).
pub(super) fn within_budget<T: serde::Serialize>(
    items: impl IntoIterator<Item = T>,
    budget: usize,
    overhead: usize,
) -> (Vec<T>, usize) {
    let mut out = Vec::new();
    let mut tokens = overhead;
    for item in items {
        let cost = estimate_tokens(&serde_json::to_string(&item).unwrap_or_default());
        if tokens + cost > budget {
            break;
        }
        tokens += cost;
        out.push(item);
    }
    (out, tokens)
}
