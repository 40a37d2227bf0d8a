//! `search_history`: the project's history by meaning — the commits that most likely fixed or
//! touched what a question describes, or what changed under a path or in a definition, newest
//! first (issue 57).

use super::*;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchHistoryArgs {
    /// What to look for in the history, in words ("proxy authentication fails on redirect", "what changed in the retry logic"). Leave it out to list the newest commits for path or symbol.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub query: Option<String>,
    /// Only commits that changed a path under this directory, this file, or matching this glob, relative to the workspace root (e.g. "src/auth/", "src/**/*.py").
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub path: Option<String>,
    /// Only commits whose changes touched this definition ("resolve_redirects", "Session.resolve_redirects").
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub symbol: Option<String>,
    /// How many commits at most (1-100, default 10; larger values are capped at 100).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub k: Option<u64>,
    /// Budget for the whole response in estimated tokens (default 2000, at most 50000): commits past it are left out.
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub max_tokens: Option<u64>,
}

#[tool_router(router = history_router, vis = "pub(super)")]
impl RaggrepMcp {
    #[tool(
        description = "Search the project's git history: the commits that most likely fixed or touched what the query describes (by meaning and words over commit messages, changed paths and changed definitions), best first; without a query, the newest commits that changed path or symbol. Each result has commit (id), date, author, subject, files (changed paths), symbols (definitions it changed), merge and score. Also commits (how many are indexed), shallow (history before a shallow clone's boundary is missing) and degraded (searched by words only) when set. The first call on a repository reads and embeds its history (about a minute for 10,000 commits); later calls read only new commits."
    )]
    async fn search_history(
        &self,
        Parameters(args): Parameters<SearchHistoryArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let result = async {
            let (k, _) = check_k(args.k)?;
            let budget = check_budget(args.max_tokens)?;
            let roots = self.roots()?;
            // A path names part of the workspace, as every path an agent sends.
            let path = args.path.as_deref().map(|path| confine::check_glob(&roots, path)).transpose()?;
            let store_model = Arc::clone(&self.store_model);
            self.blocking(move |ws| {
                let scope = ws.history_scope(None, None, path.as_deref()).ok_or("no workspace root")?;
                let query = crate::engine::HistoryQuery { text: args.query, path: scope.path, symbol: args.symbol, k };
                let answer = crate::engine::history::search_history(
                    &scope.location,
                    &store_model,
                    &query,
                    crate::audit::Door::Mcp,
                    &mut |_| {},
                )
                .map_err(|e| e.to_string())?;
                let mut response = answer.response;
                // Within the budget: the best commits that fit beside the rest of the answer.
                let results = std::mem::take(&mut response.results);
                let overhead = estimate_tokens(&serde_json::to_string(&response).unwrap_or_default());
                response.results = within_budget(results, budget, overhead).0;
                Ok(success(response))
            })
            .await
        };
        Ok(result.await.unwrap_or_else(failure))
    }
}
