//! raggrep's integration tests: the real binary over stdio (CLI, LSP, MCP), the real model, real
//! fixture trees. One test binary with a module per area, so the engine and its dependencies link
//! once: twelve binaries each linked all of it (a CI run once filled its disk with them).
//!
//! Run one area with `cargo test --test it cli::`, one test with its name as usual.

// The clients and fixture helpers, shared with the benchmarks (which include them by path too).
#[path = "../support/fixture.rs"]
mod fixture;
#[path = "../support/lsp_client.rs"]
mod lsp_client;
#[path = "../support/mcp_client.rs"]
mod mcp_client;

mod ask;
mod cli;
mod embed;
mod embedding_cache;
mod hardening;
mod history;
mod lsp;
mod lsp_framing;
mod mcp;
mod three_doors;
mod vectordb;
mod walk;
mod workspace;
