//! `find_similar`: code like a range of a file or a snippet.

use super::*;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FindSimilarArgs {
    /// File holding the code to compare with, relative to a workspace root (or absolute inside one). Give start_line and end_line with it; leave it out when giving code.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub path: Option<String>,
    /// First line of the code in path (1-based).
    #[serde(default)]
    #[schemars(with = "u32", transform = optional_argument)]
    pub start_line: Option<u32>,
    /// Last line of the code in path (1-based, inclusive).
    #[serde(default)]
    #[schemars(with = "u32", transform = optional_argument)]
    pub end_line: Option<u32>,
    /// A code snippet to find similar code for, instead of path and lines.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub code: Option<String>,
    /// How many results at most (1-100, default 10; larger values are capped at 100).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub k: Option<u64>,
    /// Budget for the whole response in estimated tokens (default 2000, at most 50000).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub max_tokens: Option<u64>,
}

#[tool_router(router = find_similar_router, vis = "pub(super)")]
impl RaggrepMcp {
    #[tool(
        description = "Find code similar to a piece of code: either path + start_line + end_line (a range of a file in the workspace; the source itself is excluded from the results) or code (a pasted snippet). Returns hits like search: location, symbol, kind, score, snippet, stale; source.location is the range actually used (widened to whole indexed units), or snippet; partial and degraded as for search."
    )]
    async fn find_similar(&self, Parameters(args): Parameters<FindSimilarArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(self.find_similar_inner(args).await.unwrap_or_else(failure))
    }

    async fn find_similar_inner(&self, args: FindSimilarArgs) -> Result<CallToolResult, String> {
        let (k, _) = check_k(args.k)?;
        let budget = check_budget(args.max_tokens)?;
        match (args.path, args.code) {
            (Some(_), Some(_)) => Err("give either path (with start_line and end_line) or code, not both".into()),
            (None, None) => Err("give path with start_line and end_line, or code (a snippet)".into()),
            (None, Some(code)) => {
                if code.trim().is_empty() {
                    return Err("code is empty".into());
                }
                // The same model embeds queries and documents: a snippet is searched densely.
                let query = Query { k, mode: Mode::Dense, ..Query::new(code) };
                self.blocking(move |ws| {
                    let hits = ws.search(&query).map_err(|e| e.to_string())?;
                    let (results, budget) = budgeted_hits(ws, &hits, budget, 20);
                    Ok(success(wire::SimilarResponse {
                        source: wire::Source::snippet(),
                        partial: ws.is_partial(),
                        degraded: ws.degraded(Mode::Dense),
                        results,
                        budget: Some(budget),
                    }))
                })
                .await
            }
            (Some(path), None) => {
                let (Some(start), Some(end)) = (args.start_line, args.end_line) else {
                    return Err("give start_line and end_line (1-based, inclusive) with path".into());
                };
                if start == 0 || end < start {
                    return Err(format!(
                        "invalid line range {start}-{end}: lines are 1-based and end_line >= start_line"
                    ));
                }
                let file = confine::resolve_file(&self.roots()?, &path)?;
                self.blocking(move |ws| {
                    let (hits, (from, to)) =
                        ws.find_similar(&file.absolute, start, end, k).map_err(|e| e.to_string())?;
                    let (results, budget) = budgeted_hits(ws, &hits, budget, 40);
                    Ok(success(wire::SimilarResponse {
                        source: wire::Source::lines(&file.relative, from, to),
                        partial: ws.is_partial(),
                        degraded: ws.degraded(Mode::Dense),
                        results,
                        budget: Some(budget),
                    }))
                })
                .await
            }
        }
    }
}
