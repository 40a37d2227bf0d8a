//! The `raggrep` binary: a thin shell over [`raggrep::cli`].

fn main() {
    std::process::exit(raggrep::cli::run());
}
