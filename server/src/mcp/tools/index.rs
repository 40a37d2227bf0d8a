//! `status` and `reindex`: the index's state, and a full update on request.

use super::*;

#[tool_router(router = index_router, vis = "pub(super)")]
impl RaggrepMcp {
    #[tool(
        description = "Index status per workspace root (roots; the first root's fields are repeated at the top level): files, chunks, embedded and pending chunks, whether indexing is running (partial), the model, the last error, and reason: why indexing is off or limited, or why the index on disk is searched by words only (another model built its vectors: lexical search and symbols answer, meaning and similarity do not, until it is rebuilt)."
    )]
    async fn status(&self) -> Result<CallToolResult, ErrorData> {
        let result = self.blocking(|ws| Ok(success(wire::StatusResponse::new(ws.status())))).await;
        Ok(result.unwrap_or_else(failure))
    }

    #[tool(
        description = "Queue a full update of the index of every root (files changed on disk are picked up automatically; use this after changing ignore files or if status shows an error). Returns at once; status shows progress."
    )]
    async fn reindex(&self) -> Result<CallToolResult, ErrorData> {
        let workspace = match self.ready() {
            Ok(workspace) => workspace,
            Err(why) => return Ok(failure(why)),
        };
        workspace.reindex();
        Ok(success(wire::Queued { queued: workspace.roots().len() }))
    }
}
