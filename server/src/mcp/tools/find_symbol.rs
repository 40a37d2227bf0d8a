//! `find_symbol`: where a name is defined, from the index.

use super::*;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FindSymbolArgs {
    /// Name of a function, method, class, struct, … ("validate_token"), or its qualified name ("TokenStore.issue", "Shard::open"). Exact, case-sensitive.
    pub name: String,
}

#[tool_router(router = find_symbol_router, vis = "pub(super)")]
impl RaggrepMcp {
    #[tool(
        description = "Where a named symbol is defined: exact, case-sensitive match on the name or qualified name over the index (no embedding). Returns definitions with location (path:start-end), kind and qualified symbol, and partial (indexing still running). Symbols do not depend on the model: an index another model built answers too."
    )]
    async fn find_symbol(&self, Parameters(args): Parameters<FindSymbolArgs>) -> Result<CallToolResult, ErrorData> {
        let result = async {
            let name = args.name.trim().to_string();
            if name.is_empty() {
                return Err("name is empty: give a function, class or other symbol name".to_string());
            }
            self.blocking(move |ws| {
                let several_roots = ws.roots().len() > 1;
                let found = symbols::find_definitions(&ws.snapshots(), &name, MAX_SYMBOLS);
                let definitions = found
                    .definitions
                    .into_iter()
                    .map(|d| wire::SymbolDefinition {
                        location: wire::location(&d.path, d.start_line, d.end_line),
                        line: (d.line != d.start_line).then_some(d.line),
                        symbol: d.symbol,
                        kind: d.kind,
                        root: several_roots.then(|| d.root.display().to_string()),
                    })
                    .collect();
                let total = found.total;
                let response = wire::SymbolDefinitions {
                    name,
                    definitions,
                    partial: ws.is_partial(),
                    omitted: (total > MAX_SYMBOLS).then(|| total - MAX_SYMBOLS),
                };
                Ok(success(response))
            })
            .await
        };
        Ok(result.await.unwrap_or_else(failure))
    }
}
