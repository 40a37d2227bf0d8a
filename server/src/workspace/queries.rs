//! What a workspace answers: searches over every root, find-similar, context for a question,
//! staleness and status.

use super::*;

impl Workspace {
    /// Searches every root; hits are merged by score.
    pub fn find(&self, query: &Query) -> Result<Found, SearchError> {
        let started = Instant::now();
        let reranker = search::reranker_for(query, Some(self.embedder.as_ref()))?;
        let vector = if query.mode != Mode::Lexical && !query.text.trim().is_empty() {
            Some(self.embedder.embed_query(&query.text)?)
        } else {
            None
        };
        let found = self.search_roots(query, vector.as_ref(), reranker, None)?;
        let mut detail = query_detail(query, found.hits.len());
        if let Some(confidence) = found.confidence {
            detail["confidence"] = serde_json::json!(confidence.value);
        }
        self.audit("search", started, detail);
        Ok(found)
    }

    /// [`Workspace::find`]'s hits alone, for doors that report no confidence.
    pub fn search(&self, query: &Query) -> Result<Vec<RootHit>, SearchError> {
        Ok(self.find(query)?.hits)
    }

    pub(super) fn search_roots(
        &self,
        query: &Query,
        vector: Option<&Vector>,
        reranker: Option<&dyn crate::embed::Reranker>,
        exclude: Option<(&Path, &str, u32, u32)>,
    ) -> Result<Found, SearchError> {
        let snapshots = self.snapshots();
        // `k` comes from the client: no more than every chunk there is.
        let total: usize = snapshots.iter().map(|v| v.snapshot.chunk_count()).sum();
        let query = &Query { k: query.k.min(total), ..query.clone() };
        if query.k == 0 {
            return Ok(Found::default());
        }
        // Learned scores are absolute (not normalised within one list), so they merge across
        // roots by score like single-mode hits do, below.
        if query.mode == Mode::Hybrid && snapshots.len() > 1 && query.fusion != search::Fusion::Learned {
            // Fused scores are normalised within one candidate list, so they do not compare
            // across roots: rank each signal across all roots first, then fuse once.
            if query.rerank {
                return Err(SearchError::RerankMode("a fixed fusion"));
            }
            let sub = |mode| Query { mode, k: query.k.saturating_mul(3).max(20), ..query.clone() };
            let dense = self.search_roots(&sub(Mode::Dense), vector, None, exclude)?.hits;
            let lexical = self.search_roots(&sub(Mode::Lexical), vector, None, exclude)?.hits;
            type Key = (PathBuf, String, u32, u32);
            let key = |h: &RootHit| -> Key { (h.root.clone(), h.hit.path.clone(), h.hit.start_line, h.hit.end_line) };
            let mut ids: Vec<RootHit> = Vec::new();
            let mut known: std::collections::HashMap<Key, usize> = std::collections::HashMap::new();
            let mut id_of = |h: &RootHit| {
                *known.entry(key(h)).or_insert_with(|| {
                    ids.push(h.clone());
                    ids.len() - 1
                })
            };
            let dense_ids: Vec<(usize, f32)> = dense.iter().map(|h| (id_of(h), h.hit.score)).collect();
            let lexical_ids: Vec<(usize, f32)> = lexical.iter().map(|h| (id_of(h), h.hit.score)).collect();
            let hits = search::fuse(&dense_ids, &lexical_ids, query.fusion)
                .into_iter()
                .take(query.k)
                .map(|(i, score)| {
                    let mut hit = ids[i].clone();
                    hit.hit.score = score;
                    hit
                })
                .collect();
            return Ok(Found { hits, confidence: None, reranked_by: None });
        }
        let mut all: Vec<RootHit> = Vec::new();
        // Roots searched by words only, each list in its own order: BM25 scores do not compare
        // with the others' (probabilities), so they are merged by rank below.
        let mut by_words: Vec<Vec<RootHit>> = Vec::new();
        let mut confidence: Option<search::Confidence> = None;
        let mut reranked = false;
        for view in &snapshots {
            let RootIndex { root, snapshot, subtree } = view;
            let scoped = within(query, subtree);
            let query: &Query = &scoped;
            let words_only = Query { mode: Mode::Lexical, rerank: false, ..query.clone() };
            let excluded = |c: &index::ChunkRef<'_>| match exclude {
                Some((r, path, start, end)) => {
                    r == root && view.visible(c.path) == Some(path) && c.start_line <= end && start <= c.end_line
                }
                None => false,
            };
            let exclude_fn: &dyn Fn(&index::ChunkRef<'_>) -> bool = &excluded;
            // Another model's vectors would answer this query vector by noise; its words (BM25,
            // symbols) do not depend on the model. Learned fusion without a query vector ranks
            // far worse than BM25 alone (TUNE chunk R@5 25.9 against 50.3), so such a root
            // answers a hybrid query as a lexical one, and a dense one not at all.
            let other_model = !snapshot.built_by(self.embedder.info());
            if other_model && query.mode == Mode::Dense {
                continue;
            }
            let ranked_apart = other_model && query.mode == Mode::Hybrid;
            let (query, vector, reranker) =
                if other_model { (&words_only, None, None) } else { (query, vector, reranker) };
            reranked |= reranker.is_some();
            // Each root reranks its own best candidates: reranked scores are learned scores
            // too, absolute, so they merge by score below.
            let results = search::search_with(
                snapshot,
                vector,
                reranker,
                query,
                exclude.is_some().then_some(exclude_fn),
                Instant::now(),
            )?;
            // The query's glob kept hits inside the root; their paths are the root's.
            let hits = results.results.into_iter().filter_map(|mut hit| {
                hit.path = view.visible(&hit.path)?.to_string();
                Some(RootHit { root: root.clone(), hit })
            });
            if ranked_apart {
                by_words.push(hits.collect());
                continue;
            }
            all.extend(hits);
            // The answer lives in one root: the workspace is as confident as its surest root.
            confidence = match (confidence, results.confidence) {
                (Some(a), Some(b)) => Some(if b.value > a.value { b } else { a }),
                (a, b) => a.or(b),
            };
        }
        all.sort_by(|a, b| b.hit.score.total_cmp(&a.hit.score));
        // The calibration knows rankings of one kind: a list mixed with words-only hits is not
        // one it was fitted on, so no claim is made about it.
        if !by_words.is_empty() {
            confidence = None;
        }
        let mut hits = interleave(all, by_words);
        hits.truncate(query.k);
        Ok(Found { hits, confidence, reranked_by: reranker.filter(|_| reranked).map(|r| r.id().to_string()) })
    }

    /// Why results in `mode` are worse than they should be (a root's lexical index unavailable,
    /// damaged vectors, another model's vectors so that only its words are searched, or none of
    /// it), root by root; `None` when all is well.
    pub fn degraded(&self, mode: Mode) -> Option<String> {
        let model = self.embedder.info();
        self.root_by_root(|root| {
            let other_model = match mode {
                Mode::Lexical => None,
                Mode::Hybrid => root.other_model(model).map(|why| format!("{BY_WORDS_ONLY}: {why}")),
                Mode::Dense => root.other_model(model).map(|why| format!("{NOT_SEARCHED}: {why}")),
            };
            other_model.or_else(|| {
                let snapshot = root.snapshot.read().ok()?.clone()?;
                snapshot.degraded(mode != Mode::Lexical, mode != Mode::Dense)
            })
        })
    }

    /// `why` of each root that has something to say, as `<root>: <why>`, joined; `None` if none.
    pub(super) fn root_by_root(&self, why: impl Fn(&Root) -> Option<String>) -> Option<String> {
        let Ok(roots) = self.roots.read() else { return None };
        let reasons: Vec<String> =
            roots.iter().filter_map(|root| Some(format!("{}: {}", root.root.display(), why(root)?))).collect();
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }

    /// True while an answer leaves part of some root out (see [`answers_are_partial`]).
    pub fn is_partial(&self) -> bool {
        self.roots.read().is_ok_and(|roots| roots.iter().any(|root| root.is_partial()))
    }

    /// Chunks similar to the code at `path` lines `start..=end` (1-based), excluding that code.
    /// Uses the indexed chunks under the range when there are any, else embeds the range's text.
    ///
    /// Also returns the lines actually used as the source: the range widened to the indexed
    /// chunks it touches (those are excluded from the results).
    pub fn find_similar(
        &self,
        path: &Path,
        start: u32,
        end: u32,
        k: usize,
    ) -> Result<(Vec<RootHit>, (u32, u32)), SearchError> {
        let started = Instant::now();
        let Some((root, rel)) = self.locate(path) else {
            return Err(SearchError::OutsideWorkspace(path.to_path_buf()));
        };
        let mut vectors: Vec<Vector> = Vec::new();
        let mut span = (start, end);
        if let Some(view) = self.view(&root) {
            let snapshot = &view.snapshot;
            let overlapping: Vec<_> = snapshot
                .chunks_of(&view.in_index(&rel))
                .into_iter()
                .filter(|c| c.start_line <= end && start <= c.end_line)
                .collect();
            // Exclude everything the source chunks cover, not just the selected lines.
            if let (Some(first), Some(last)) = (overlapping.first(), overlapping.last()) {
                span = (span.0.min(first.start_line), span.1.max(last.end_line));
            }
            // Another model's vectors are not this model's: the source is embedded anew below.
            if snapshot.built_by(self.embedder.info()) {
                vectors.extend(overlapping.iter().filter_map(|c| snapshot.chunk_vector(c.index)));
            }
        }
        let text = self.read_lines(path, start, end);
        let buffer_differs = self.overlays.contains_key(&canonical_or_parent(path));
        if vectors.is_empty() || buffer_differs {
            if text.trim().is_empty() {
                return Ok((Vec::new(), span));
            }
            vectors = self.embedder.embed_documents(&[text.as_str()])?;
        }
        let dim = vectors.first().map_or(0, Vector::dim);
        let mut mean = vec![0.0f32; dim];
        for v in &vectors {
            mean.iter_mut().zip(v.as_slice()).for_each(|(m, x)| *m += x);
        }
        let vector = Vector::normalized(mean);
        let query = Query { k, mode: Mode::Dense, ..Query::new(text) };
        let hits = self.search_roots(&query, Some(&vector), None, Some((&root, &rel, span.0, span.1)))?.hits;
        self.audit("find_similar", started, serde_json::json!({ "k": k, "results": hits.len() }));
        Ok((hits, span))
    }

    /// Lines (1-based, inclusive) of the smallest indexed unit containing `line` of `path`.
    pub fn enclosing_chunk(&self, path: &Path, rel: &str, line: u32) -> Option<(u32, u32)> {
        let (root, _) = self.locate(path)?;
        let view = self.view(&root)?;
        view.snapshot
            .chunks_of(&view.in_index(rel))
            .into_iter()
            .filter(|c| c.start_line <= line && line <= c.end_line)
            .min_by_key(|c| c.end_line - c.start_line)
            .map(|c| (c.start_line, c.end_line))
    }

    /// Where a history question goes: the index of the root a file lies in (else the first
    /// root's), a path in that index's terms — `path` when given (relative to the root, as every
    /// path of a hit), else the file, else the root's directory when it is a folder inside a
    /// project — and the definition around a line of the file, if any.
    pub fn history_scope(&self, file: Option<&Path>, line: Option<u32>, path: Option<&str>) -> Option<HistoryScope> {
        let (root, rel) = match file {
            Some(file) => {
                let (root_path, rel) = self.locate(file)?;
                (self.root(&root_path)?, Some(rel))
            }
            None => (self.roots.read().ok()?.first().cloned()?, None),
        };
        let in_index = |p: &str| crate::index::in_index(&root.subtree, p.trim_start_matches("./"));
        let path = match (path, &rel) {
            (Some(path), _) => Some(in_index(path)),
            (None, Some(rel)) => Some(in_index(rel)),
            (None, None) => (!root.subtree.is_empty()).then(|| root.subtree.clone()),
        };
        // The innermost definition around the line, from the file's syntax as it is now (an
        // editor buffer or the disk): a method too small for a chunk of its own still counts.
        let symbol = file.zip(line).and_then(|(file, line)| {
            let text = match self.overlays.get(&canonical_or_parent(file)) {
                Some(overlay) => overlay.value().clone(),
                None => std::fs::read_to_string(file).ok()?,
            };
            let language = crate::lang::Language::detect(file, &text);
            crate::chunk::outline(&text, language, &crate::chunk::ChunkConfig::default())
                .into_iter()
                .filter(|d| d.start_line <= line && line <= d.end_line)
                .min_by_key(|d| d.end_line - d.start_line)
                .map(|d| d.symbol)
        });
        Some(HistoryScope { location: root.location.clone(), path, symbol })
    }

    /// The best chunks for `question` that fit in `max_tokens`, each headed by its citation.
    pub fn context(&self, question: &str, max_tokens: usize) -> Result<Context, SearchError> {
        let started = Instant::now();
        let query = Query { k: crate::ask::CANDIDATES, ..Query::new(question) };
        let Found { hits, confidence, .. } = self.find(&query)?;
        let snippets = hits.into_iter().map(|RootHit { root, hit }| {
            let body = self.read_lines(&crate::walk::resolve(&root, &hit.path), hit.start_line, hit.end_line);
            crate::ask::Snippet::from_hit(hit, body)
        });
        let fitted = crate::ask::fit_snippets(snippets, max_tokens);
        let tokens = fitted.tokens;
        let sources: Vec<String> = fitted.sources.iter().map(crate::ask::Source::citation).collect();
        self.audit(
            "context",
            started,
            serde_json::json!({ "max_tokens": max_tokens, "tokens": tokens, "sources": sources.len() }),
        );
        Ok(Context { text: fitted.text, tokens, sources, confidence })
    }

    /// Lines `start..=end` (1-based) of a file, from the editor buffer if there is one.
    pub(super) fn read_lines(&self, path: &Path, start: u32, end: u32) -> String {
        match self.overlays.get(&canonical_or_parent(path)) {
            Some(overlay) => crate::ask::line_range(overlay.value(), start, end),
            None => crate::ask::read_lines(path, start, end),
        }
    }

    /// Whether the published index of the root holding `path` has it as an indexed file.
    pub fn indexes(&self, path: &Path) -> bool {
        let Some((root, rel)) = self.locate(path) else { return false };
        self.view(&root).is_some_and(|v| v.snapshot.has_file(&v.in_index(&rel)))
    }

    /// Whether the file behind a hit changed since it was indexed: the chunk's bytes on disk no
    /// longer hash to what the index holds (or the file is gone).
    pub fn is_stale(&self, hit: &RootHit) -> bool {
        let Some(view) = self.view(&hit.root) else { return false };
        let chunks = view.snapshot.chunks_of(&view.in_index(&hit.hit.path));
        // Look the chunk up by position, not index: a newer snapshot may have been swapped in.
        let Some(chunk) = chunks.iter().find(|c| c.start_line == hit.hit.start_line && c.end_line == hit.hit.end_line)
        else {
            return true;
        };
        let Ok(bytes) = std::fs::read(crate::walk::resolve(&hit.root, &hit.hit.path)) else { return true };
        match bytes.get(chunk.start_byte..chunk.end_byte) {
            Some(body) => crate::content_hash(body) != chunk.hash,
            None => true,
        }
    }

    /// The latest published index of a root, as the root sees it.
    pub(super) fn view(&self, root: &Path) -> Option<RootIndex> {
        self.root(root)?.view()
    }

    /// The latest published index of every root that has one, in root order.
    pub fn snapshots(&self) -> Vec<RootIndex> {
        let Ok(roots) = self.roots.read() else { return Vec::new() };
        roots.iter().filter_map(|r| r.view()).collect()
    }

    pub fn status(&self) -> Vec<RootStatus> {
        let Ok(roots) = self.roots.read() else { return Vec::new() };
        let level = self.memory_level.lock().map(|l| *l).unwrap_or(MemoryLevel::Ok);
        roots
            .iter()
            .map(|root| {
                let snapshot = root.snapshot.read().ok().and_then(|s| s.clone());
                let by_words = root.other_model(self.embedder.info()).map(|why| format!("{BY_WORDS_ONLY}: {why}"));
                let state = root.state.lock();
                let (enabled, indexing, last_error, reason) = match &state {
                    Ok(s) => (s.enabled, s.indexing, s.last_error.clone(), s.reason.clone()),
                    Err(_) => (false, false, None, None),
                };
                let paused = self.is_paused().then(|| {
                    "indexing is paused (resume with raggrep.resume, or SIGUSR2 to raggrep watch)".to_string()
                });
                let reasons: Vec<String> = [paused.or(reason), by_words].into_iter().flatten().collect();
                RootStatus {
                    // The root is said once, by the status itself.
                    index: snapshot.as_ref().map(|s| IndexStats { root: String::new(), ..s.stats() }),
                    root: root.root.display().to_string(),
                    index_root: (!root.subtree.is_empty()).then(|| root.location.root.display().to_string()),
                    enabled,
                    indexing,
                    partial: answers_are_partial(
                        enabled,
                        indexing,
                        snapshot.as_deref().map(|s| root.waits_for_vectors(s)),
                    ),
                    last_error,
                    memory_level: level,
                    reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
                }
            })
            .collect()
    }
}

/// `query` kept to a root's part of its index ([`RootIndex`]): the root's files, and inside
/// them the query's own glob (relative to the root).
fn within<'q>(query: &'q Query, subtree: &str) -> std::borrow::Cow<'q, Query> {
    if subtree.is_empty() {
        return std::borrow::Cow::Borrowed(query);
    }
    let path_glob = search::glob_under(subtree, query.path_glob.as_deref());
    std::borrow::Cow::Owned(Query { path_glob: Some(path_glob), ..query.clone() })
}

/// `lists` merged by rank: the first of each, then the second of each, and so on (lists whose
/// scores do not compare).
pub(super) fn interleave(first: Vec<RootHit>, rest: Vec<Vec<RootHit>>) -> Vec<RootHit> {
    if rest.is_empty() {
        return first;
    }
    let mut lists: Vec<std::vec::IntoIter<RootHit>> = std::iter::once(first).chain(rest).map(Vec::into_iter).collect();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        out.extend(lists.iter_mut().filter_map(Iterator::next));
        if out.len() == before {
            return out;
        }
    }
}

/// What the audit log keeps of a query: its settings and counts, not its text.
pub fn query_detail(query: &Query, results: usize) -> serde_json::Value {
    serde_json::json!({
        "mode": query.mode,
        "k": query.k,
        "query_chars": query.text.chars().count(),
        "filtered": query.path_glob.is_some() || query.language.is_some(),
        "rerank": query.rerank,
        "results": results,
    })
}
