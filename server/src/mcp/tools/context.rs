//! `context`: the code to read about a question, within a token budget.

use super::*;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContextArgs {
    /// The question the code should answer, in words.
    pub question: String,
    /// Budget for the returned code in estimated tokens (default 2000, at most 50000).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub max_tokens: Option<u64>,
}

#[tool_router(router = context_router, vis = "pub(super)")]
impl RaggrepMcp {
    #[tool(
        description = "The best code for a question, ready to read: deduplicated chunks within max_tokens, each headed by its citation (path:start-end) in a fenced block. Returns text, tokens (estimated), sources (the citations) and partial; degraded (why retrieval is worse than usual) when set; confidence and no_confident_match as for search (true: the text is only the closest code, probably not about the question)."
    )]
    async fn context(&self, Parameters(args): Parameters<ContextArgs>) -> Result<CallToolResult, ErrorData> {
        let result = async {
            let question = args.question.trim().to_string();
            if question.is_empty() {
                return Err("question is empty: ask what the code should answer".to_string());
            }
            let budget = check_budget(args.max_tokens)?;
            self.blocking(move |ws| {
                let context = ws.context(&question, budget).map_err(|e| e.to_string())?;
                Ok(success(wire::ContextResponse::new(context, ws.is_partial(), ws.degraded(Mode::Hybrid))))
            })
            .await
        };
        Ok(result.await.unwrap_or_else(failure))
    }
}
