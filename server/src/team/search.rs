//! `raggrep query --from`: search the team index with the local engine's ranking.
//!
//! The two rankings come from PostgreSQL (pgvector's HNSW for the dense side, full-text search
//! over the same code tokens as the local BM25 for the lexical side); their union is fused by the
//! same learned fusion ([`crate::search::learned`]) as a local search, and overlapping hits of one
//! file collapse the same way.

use std::collections::HashMap;
use std::time::Instant;

use postgres::Client;

use super::push::{kind_from_name, vector_text};
use super::schema::{IndexModel, check_readable};
use super::{TeamError, TeamUrl};
use crate::chunk::ChunkKind;
use crate::embed::Embedder;
use crate::lang::Language;
use crate::search::{Mode, learned, sort_best_first};

/// A search of the team index.
#[derive(Debug, Clone)]
pub struct TeamQuery {
    pub text: String,
    pub k: usize,
    pub mode: Mode,
    /// Only repositories whose name (`remote@branch`) matches this glob (`*`, `?`).
    pub repo_glob: Option<String>,
    /// Leave out every branch of these remotes (`github.com/acme/api`): a door that searches
    /// the local checkout of a repository already has it, fresher than the team's copy.
    pub exclude_remotes: Vec<String>,
}

/// One result: a chunk of one repository, in the local engine's terms plus the repository.
#[derive(Debug, Clone, PartialEq)]
pub struct TeamHit {
    pub repo: String,
    pub hit: crate::search::Hit,
    /// The chunk's whole text: the file is in another repository, so a reader cannot open it.
    pub content: String,
}

#[derive(Debug, Clone)]
pub struct TeamResults {
    pub query: String,
    pub took_ms: f64,
    pub results: Vec<TeamHit>,
}

/// A candidate row as the database returns it (dense and lexical queries select the same).
struct Row {
    repo: String,
    path: String,
    start_line: u32,
    end_line: u32,
    kind: ChunkKind,
    symbol: String,
    container: String,
    content: String,
    cosine: f32,
    file: String,
    /// From the path, as the local index derives it.
    language: Language,
}

/// The largest `k` a team query serves (it sizes SQL limits).
pub const MAX_K: usize = 200;

pub fn search(
    client: &mut Client,
    url: &TeamUrl,
    embedder: Option<&dyn Embedder>,
    model: &IndexModel,
    query: &TeamQuery,
) -> Result<TeamResults, TeamError> {
    let start = Instant::now();
    check_readable(client, url, model)?;
    let k = query.k.clamp(1, MAX_K);
    let limit = crate::search::candidates(k) as i64;
    let pattern = query.repo_glob.as_deref().map_or_else(|| "%".to_string(), glob_to_like);
    let vector = match (query.mode, embedder) {
        (Mode::Lexical, _) => None,
        (_, Some(embedder)) if !query.text.trim().is_empty() => {
            Some(vector_text(embedder.embed_query(&query.text)?.as_slice()))
        }
        _ => None,
    };
    let terms = tsquery(&query.text);

    let mut rows: Vec<Row> = Vec::new();
    let mut ids: HashMap<(String, String, u32, u32), usize> = HashMap::new();
    let mut add = |row: Row, rows: &mut Vec<Row>| -> usize {
        let id = (row.repo.clone(), row.path.clone(), row.start_line, row.end_line);
        *ids.entry(id).or_insert_with(|| {
            rows.push(row);
            rows.len() - 1
        })
    };
    // Read-only and in one snapshot: both rankings see the same state of every repository.
    let mut tx = client.build_transaction().read_only(true).start().map_err(|e| url.db_error(&e))?;
    let mut dense: Vec<(usize, f32)> = Vec::new();
    if let Some(vector) = &vector {
        // The graph returns at most ef_search rows per scan; filtered scans go on until enough
        // rows pass the filter (pgvector 0.8's iterative scans), then the order is fixed here.
        let ef = (limit * 4).clamp(40, 1000);
        tx.batch_execute(&format!("SET LOCAL hnsw.ef_search = {ef}; SET LOCAL hnsw.iterative_scan = relaxed_order"))
            .map_err(|e| url.db_error(&e))?;
        let found = tx
            .query(
                "SELECT r.name, e.path, e.start_line, e.end_line, e.kind, e.symbol, e.container, c.content,
                        (1 - (c.embedding <=> $1::text::vector))::real
                 FROM raggrep.chunk c
                 JOIN raggrep.entry e ON e.chunk_key = c.key
                 JOIN raggrep.repo r ON r.id = e.repo_id
                 WHERE r.name LIKE $2 AND NOT (coalesce(r.remote, '') = ANY($4))
                 ORDER BY c.embedding <=> $1::text::vector
                 LIMIT $3",
                &[vector, &pattern, &limit, &query.exclude_remotes],
            )
            .map_err(|e| url.db_error(&e))?;
        for row in found {
            let row = read_row(&row);
            let cosine = row.cosine;
            dense.push((add(row, &mut rows), cosine));
        }
        sort_best_first(&mut dense);
    }
    let mut lexical: Vec<(usize, f32)> = Vec::new();
    if query.mode != Mode::Dense && !terms.is_empty() {
        // Ranked first, over the matches alone; the cosine (a 384-d distance) and the content are
        // read for the kept rows only.
        let cosine = match &vector {
            Some(_) => "(1 - (c.embedding <=> $5::text::vector))::real",
            None => "0::real",
        };
        let sql = format!(
            "WITH matched AS MATERIALIZED (
                 SELECT e.repo_id, e.path, e.start_line, e.end_line, e.kind, e.symbol, e.container, e.chunk_key,
                        ts_rank(c.terms, q, 1) AS rank
                 FROM raggrep.chunk c
                 JOIN raggrep.entry e ON e.chunk_key = c.key
                 JOIN raggrep.repo r ON r.id = e.repo_id,
                 to_tsquery('simple', $1) q
                 WHERE c.terms @@ q AND r.name LIKE $2 AND NOT (coalesce(r.remote, '') = ANY($4))
                 ORDER BY rank DESC, e.path, e.start_line
                 LIMIT $3)
             SELECT r.name, m.path, m.start_line, m.end_line, m.kind, m.symbol, m.container, c.content, {cosine}, m.rank
             FROM matched m
             JOIN raggrep.chunk c ON c.key = m.chunk_key
             JOIN raggrep.repo r ON r.id = m.repo_id
             ORDER BY m.rank DESC, m.path, m.start_line"
        );
        let found = match &vector {
            Some(v) => tx.query(&sql, &[&terms, &pattern, &limit, &query.exclude_remotes, v]),
            None => tx.query(&sql, &[&terms, &pattern, &limit, &query.exclude_remotes]),
        }
        .map_err(|e| url.db_error(&e))?;
        for row in found {
            let rank: f32 = row.get(9);
            lexical.push((add(read_row(&row), &mut rows), rank));
        }
    }
    tx.commit().map_err(|e| url.db_error(&e))?;

    let ranked: Vec<(usize, f32)> = match query.mode {
        Mode::Dense => dense,
        Mode::Lexical => lexical,
        Mode::Hybrid => match learned::weights() {
            Some(weights) => {
                let facts = |i: usize| {
                    rows.get(i).map(|r| learned::ChunkFacts {
                        path: &r.path,
                        file: &r.file,
                        kind: r.kind,
                        symbol: &r.symbol,
                        container: &r.container,
                        code_lines: crate::chunk::code_lines(&r.content, r.language),
                    })
                };
                let stored_cosine = |i: usize| rows.get(i).map_or(0.0, |r| r.cosine);
                learned::rank(
                    &learned::candidates_from(&query.text, &dense, &lexical, &[], facts, stored_cosine),
                    weights,
                )
            }
            None => crate::search::fuse(&dense, &lexical, crate::search::Fusion::Weighted { dense_weight: 0.5 }),
        },
    };
    let hits = crate::search::distinct_hits(ranked, k, |id, score| {
        let row = rows.get(id)?;
        let language = row.language;
        let hit = TeamHit {
            repo: row.repo.clone(),
            hit: crate::search::Hit {
                path: row.path.clone(),
                start_line: row.start_line,
                end_line: row.end_line,
                // The file is on another machine: its first line is as far as a jump can know.
                line: row.start_line,
                score,
                symbol: crate::chunk::qualified_name(&row.container, &row.symbol, row.kind, language),
                kind: row.kind,
                language,
                snippet: crate::search::snippet_of(row.content.lines()),
                chunk: id,
            },
            content: row.content.clone(),
        };
        Some(((row.repo.as_str(), row.path.as_str()), row.start_line, row.end_line, hit))
    });
    Ok(TeamResults { query: query.text.clone(), took_ms: start.elapsed().as_secs_f64() * 1000.0, results: hits })
}

fn read_row(row: &postgres::Row) -> Row {
    let repo: String = row.get(0);
    let path: String = row.get(1);
    Row {
        file: format!("{repo}\u{0}{path}"),
        language: Language::from_path(std::path::Path::new(&path)),
        repo,
        path,
        start_line: row.get::<_, i32>(2).max(0) as u32,
        end_line: row.get::<_, i32>(3).max(0) as u32,
        kind: kind_from_name(row.get(4)),
        symbol: row.get(5),
        container: row.get(6),
        content: row.get(7),
        cosine: row.get(8),
    }
}

/// The query's content words as a full-text query matching any of them (as BM25 scores any
/// term), each quoted so no character of the query is read as tsquery syntax. Stop words are left
/// out: PostgreSQL's ranking has no inverse document frequency to discount them, and they would
/// match nearly every chunk.
fn tsquery(text: &str) -> String {
    learned::content_words(text)
        .iter()
        .filter(|t| !t.is_empty())
        .map(|t| format!("'{}'", t.replace('\\', "\\\\").replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A repository glob (`github.com/acme/*@main`) as a LIKE pattern.
fn glob_to_like(glob: &str) -> String {
    let mut out = String::with_capacity(glob.len());
    for c in glob.chars() {
        match c {
            '*' => out.push('%'),
            '?' => out.push('_'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_globs_become_like_patterns() {
        assert_eq!(glob_to_like("github.com/acme/*@main"), "github.com/acme/%@main");
        assert_eq!(glob_to_like("a_b?%"), "a\\_b_\\%");
    }

    #[test]
    fn queries_cannot_inject_tsquery_syntax() {
        let q = tsquery("validate the token's expiry & (drop) | !x");
        assert!(!q.contains('&') && !q.contains('(') && !q.contains('!'), "{q}");
        assert!(q.contains("'token'"), "{q}");
    }
}
