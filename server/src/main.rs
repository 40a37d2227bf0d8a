//! The `raggrep` binary: parses the command line ([`raggrep::cli`]) and runs what it asks for.
//! The servers are started from here, so no front door calls another.

use raggrep::{cli, lsp, mcp};

fn main() {
    let code = match cli::run() {
        cli::Entry::Done(code) => code,
        cli::Entry::Lsp => lsp::run(),
        cli::Entry::Mcp { roots, http, model, ort_dylib } => mcp::run(mcp::Options { roots, model, ort_dylib, http }),
    };
    std::process::exit(code);
}
