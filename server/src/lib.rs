//! raggrep: local-first semantic code search.
//!
//! The engine is a pipeline of stages, one module each, with data flowing one way:
//!
//! ```text
//! walk ──▶ chunk ──▶ embed ──▶ index ──▶ search
//! ```
//!
//! Front doors (`cli`, `lsp`, `mcp`) sit on top of the engine API and never reach
//! into each other. See `ARCHITECTURE.md` for the map and its invariants.

pub mod ask;
pub mod audit;
pub mod chunk;
pub mod cli;
pub mod config;
pub mod embed;
pub mod engine;
pub mod history;
pub mod hooks;
pub mod index;
pub mod lang;
pub mod lsp;
pub mod mcp;
pub mod priority;
pub mod search;
pub mod stdio;
pub mod symbols;
pub mod team;
pub mod vectordb;
pub mod walk;
pub mod watch;
pub mod wire;
pub mod workspace;

/// Content hash used for files and chunks: xxh3-128, stable across runs and platforms.
pub fn content_hash(bytes: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(bytes)
}
