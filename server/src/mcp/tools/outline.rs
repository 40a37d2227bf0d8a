//! `outline`: the definitions of a file, from the chunker.

use super::*;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct OutlineArgs {
    /// File to outline, relative to a workspace root (or absolute inside one).
    pub path: String,
}

#[tool_router(router = outline_router, vis = "pub(super)")]
impl RaggrepMcp {
    #[tool(
        description = "The definitions in one file (functions, methods, classes, structs, …; Markdown: its sections; YAML, TOML, JSON: its keys as dotted paths) with kind, qualified symbol and 1-based line range, from its syntax tree: exact, no embedding, works on files not yet indexed."
    )]
    async fn outline(&self, Parameters(args): Parameters<OutlineArgs>) -> Result<CallToolResult, ErrorData> {
        let result = async {
            let file = confine::resolve_file(&self.roots()?, &args.path)?;
            self.blocking(move |ws| {
                // The index's size limit holds here too: nothing is sized from input.
                let limit = ws.settings().max_file_size;
                let size = std::fs::metadata(&file.absolute).map(|m| m.len()).unwrap_or(0);
                if size > limit {
                    return Err(format!(
                        "{} is too large to outline ({size} bytes; the limit is {limit})",
                        file.relative
                    ));
                }
                let text = std::fs::read_to_string(&file.absolute)
                    .map_err(|e| format!("cannot read {}: {e}", file.relative))?;
                let language = Language::detect(&file.absolute, &text);
                let definitions = outline(&text, language, &ChunkConfig::default());
                Ok(success(wire::Outline {
                    path: file.relative,
                    language,
                    definitions: definitions.into_iter().map(wire::OutlineEntry::from).collect(),
                }))
            })
            .await
        };
        Ok(result.await.unwrap_or_else(failure))
    }
}
