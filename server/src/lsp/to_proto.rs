//! Engine → LSP conversions. Lines are 1-based inclusive in the engine, 0-based in LSP; a hit
//! spans whole lines, so its range ends at the start of the line after it (no UTF-16 column
//! arithmetic needed).

use std::path::Path;

use tower_lsp_server::ls_types::{Location, Position, Range, SymbolInformation, SymbolKind, Uri};

use crate::engine::ChunkKind;
use crate::engine::RootHit;
use crate::wire;

pub fn uri(path: &Path) -> Option<Uri> {
    Uri::from_file_path(path)
}

pub fn line_range(start_line: u32, end_line: u32) -> Range {
    Range::new(Position::new(start_line.saturating_sub(1), 0), Position::new(end_line, 0))
}

pub fn symbol_kind(kind: ChunkKind) -> SymbolKind {
    match kind {
        ChunkKind::Function => SymbolKind::FUNCTION,
        ChunkKind::Method => SymbolKind::METHOD,
        ChunkKind::Class | ChunkKind::Impl => SymbolKind::CLASS,
        ChunkKind::Struct => SymbolKind::STRUCT,
        ChunkKind::Enum => SymbolKind::ENUM,
        ChunkKind::Interface | ChunkKind::Trait => SymbolKind::INTERFACE,
        ChunkKind::Module => SymbolKind::MODULE,
        ChunkKind::Type => SymbolKind::TYPE_PARAMETER,
        ChunkKind::Macro => SymbolKind::FUNCTION,
        ChunkKind::Code | ChunkKind::Text => SymbolKind::FILE,
        ChunkKind::Section => SymbolKind::STRING,
    }
}

/// A hit as a workspace symbol: named by its symbol or, for anonymous chunks, its first line.
pub fn symbol_information(hit: &RootHit) -> Option<SymbolInformation> {
    let uri = uri(&crate::walk::resolve(&hit.root, &hit.hit.path))?;
    let name = match &hit.hit.symbol {
        Some(symbol) => symbol.clone(),
        None => {
            hit.hit.snippet.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("…").chars().take(80).collect()
        }
    };
    #[allow(deprecated)]
    Some(SymbolInformation {
        name,
        kind: symbol_kind(hit.hit.kind),
        tags: None,
        deprecated: None,
        // From the definition's own line: a jump lands on `def load_settings`, not on the imports
        // its chunk starts with.
        location: Location::new(uri, line_range(hit.hit.line.max(hit.hit.start_line), hit.hit.end_line)),
        container_name: Some(hit.hit.path.clone()),
    })
}

/// A hit as the custom commands send it: the shared wire hit plus `uri` and `range`.
pub fn hit(hit: &RootHit) -> wire::Hit {
    let mut out = wire::Hit::new(hit, true);
    out.uri = uri(&crate::walk::resolve(&hit.root, &hit.hit.path)).map(|u| u.as_str().to_string());
    out.range = Some(wire::LineRange::whole_lines(hit.hit.start_line, hit.hit.end_line));
    out
}
