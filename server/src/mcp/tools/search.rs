//! `search`: the codebase by meaning and keywords, hits within a token budget.

use super::*;

/// Ranking of `search`.
#[derive(Debug, Clone, Copy, Default, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum SearchMode {
    /// Meaning and keywords fused (best for most queries).
    #[default]
    Hybrid,
    /// Meaning only (embeddings): descriptions in words.
    Dense,
    /// Keywords only (BM25 over code-aware tokens): exact identifiers.
    Lexical,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// What to look for: a description in words ("check whether an API token is still valid") or identifiers ("validate_token").
    pub query: String,
    /// How many results at most (1-100, default 10; larger values are capped at 100).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub k: Option<u64>,
    /// Ranking: "hybrid" (default: meaning + keywords), "dense" (meaning only) or "lexical" (keywords only).
    #[serde(default, deserialize_with = "null_as_default")]
    pub mode: SearchMode,
    /// Only files whose path relative to a workspace root matches this glob, e.g. "src/**/*.py".
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub path: Option<String>,
    /// Only this language: rust, python, javascript, typescript, tsx, go, java, c, cpp, ruby, php, csharp, kotlin, swift, scala, elixir, lua, bash, zig, haskell, dart, objc, ocaml, r, julia, yaml, toml, json, markdown or text.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub lang: Option<String>,
    /// Budget for the whole response in estimated tokens (default 2000, at most 50000): hits past it are left out and counted in "omitted".
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub max_tokens: Option<u64>,
    /// Re-sort the best 10 candidates with the reranker, which reads the query and each candidate together (hybrid mode only; default false): finds the right function more often, ~0.2 s slower.
    #[serde(default, deserialize_with = "null_as_default")]
    pub rerank: bool,
    /// Leave out hits scoring below this. In hybrid mode a hit's score is the probability that it is what was asked about: 0.01 leaves out about a third of the hits (two thirds when nothing here matches) and about 1 in 20 answers; dense: cosine; lexical: BM25.
    #[serde(default)]
    #[schemars(with = "f64", transform = optional_argument)]
    pub min_score: Option<f64>,
}

#[tool_router(router = search_router, vis = "pub(super)")]
impl RaggrepMcp {
    #[tool(
        description = "Search the codebase by meaning and keywords. Returns ranked hits: location (path:start-end, 1-based inclusive lines), symbol, kind, language, score, a short snippet, and stale (the file changed since it was indexed); tokens (estimated size of the response). Also partial (indexing still running: results cover what is indexed so far), omitted (hits left out to stay within max_tokens) and degraded (why ranking is worse than usual) when set. In hybrid mode, each hit's score is the probability (0-1) that it is what was asked about, confidence (0-1: how likely the first 5 hits hold it) and no_confident_match (true: probably nothing here matches; the hits are only the closest code)."
    )]
    async fn search(&self, Parameters(args): Parameters<SearchArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(self.search_inner(args).await.unwrap_or_else(failure))
    }

    async fn search_inner(&self, args: SearchArgs) -> Result<CallToolResult, String> {
        let (k, capped) = check_k(args.k)?;
        let budget = check_budget(args.max_tokens)?;
        // The agent's glob stays inside the roots, as every path it sends.
        let path = args.path.as_deref().map(|g| confine::check_glob(&self.roots()?, g)).transpose()?;
        let mode = match args.mode {
            SearchMode::Hybrid => Mode::Hybrid,
            SearchMode::Dense => Mode::Dense,
            SearchMode::Lexical => Mode::Lexical,
        };
        let request = SearchRequest {
            mode,
            lang: args.lang,
            path,
            min_score: args.min_score,
            rerank: args.rerank,
            ..SearchRequest::new(args.query, k)
        };
        let query = request.query().map_err(|e| e.to_string())?;
        let started = std::time::Instant::now();
        self.blocking(move |ws| {
            let Found { hits, confidence, reranked_by } = ws.find(&query).map_err(|e| e.to_string())?;
            let mut response = wire::SearchResponse {
                query: query.text.clone(),
                took_ms: 0.0,
                partial: ws.is_partial(),
                degraded: ws.degraded(query.mode),
                results: Vec::new(),
                budget: Some(wire::Budget { tokens: 0, omitted: 0 }),
                k_capped: capped.map(|asked| format!("k {asked} was capped at {MAX_K}")),
                reranked_by,
                confidence: confidence.map(wire::Confidence::from),
                team: None,
                root: None,
            };
            let overhead = estimate_tokens(&serde_json::to_string(&response).unwrap_or_default());
            let (results, budget) = budgeted_hits(ws, &hits, budget, overhead);
            response.results = results;
            response.budget = Some(budget);
            response.took_ms = (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
            Ok(success(response))
        })
        .await
    }
}
