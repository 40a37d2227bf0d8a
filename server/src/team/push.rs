//! `raggrep push`: a workspace's index into the team index, sending only what changed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use postgres::Client;
use postgres::types::ToSql;

use super::{TeamError, TeamUrl};
use crate::chunk::ChunkKind;
use crate::index::Snapshot;

/// Chunks per upload batch (each batch is committed on its own: what an interrupted push sent
/// stays, and the next push skips it).
pub const DEFAULT_BATCH: usize = 256;
/// Rows per statement when writing files and entries or asking which keys exist.
const ROWS_PER_STATEMENT: usize = 2000;

/// Which repository and branch a workspace is, in the team index.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RepoIdentity {
    /// `remote@branch`, e.g. `github.com/acme/api@main`: the key readers filter on.
    pub name: String,
    pub remote: Option<String>,
    pub branch: Option<String>,
    pub commit: Option<String>,
}

/// Reads the identity from git: the `origin` remote (credentials and `.git` dropped) and the
/// checked-out branch. `remote` / `branch` override what git says (CI with a detached HEAD, a
/// tree without a remote).
pub fn identify(root: &Path, remote: Option<&str>, branch: Option<&str>) -> Result<RepoIdentity, TeamError> {
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git").arg("-C").arg(root).args(args).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !text.is_empty()).then_some(text)
    };
    let remote = match remote {
        Some(r) => Some(normalize_remote(r)),
        None => git(&["config", "--get", "remote.origin.url"]).map(|r| normalize_remote(&r)),
    };
    let branch = match branch {
        Some(b) => Some(b.to_string()),
        None => git(&["rev-parse", "--abbrev-ref", "HEAD"]).filter(|b| b != "HEAD"),
    };
    let commit = git(&["rev-parse", "HEAD"]);
    let Some(remote_name) = remote.clone().filter(|r| !r.is_empty()) else {
        return Err(TeamError::Repo(format!(
            "{} has no git remote named origin: name the repository with --remote NAME (e.g. github.com/acme/api)",
            root.display()
        )));
    };
    let Some(branch_name) = branch.clone() else {
        return Err(TeamError::Repo(format!(
            "{}: HEAD is not on a branch (detached, or not a git checkout): name the branch with --branch NAME",
            root.display()
        )));
    };
    Ok(RepoIdentity { name: format!("{remote_name}@{branch_name}"), remote, branch, commit })
}

/// `https://user:token@github.com/acme/api.git`, `git@github.com:acme/api.git` and
/// `ssh://git@github.com/acme/api` all become `github.com/acme/api`: one repository, one name,
/// and no credential ever reaches the database.
pub fn normalize_remote(remote: &str) -> String {
    let remote = remote.trim();
    let without_scheme = match remote.find("://") {
        Some(i) => &remote[i + 3..],
        None => remote,
    };
    let (authority, path) = match remote.find("://") {
        Some(_) => without_scheme.split_once('/').unwrap_or((without_scheme, "")),
        // scp-like `user@host:path`; a local path has no colon before its first slash.
        None => match without_scheme.split_once(':') {
            Some((host, path)) if !host.contains('/') => (host, path),
            _ => ("", without_scheme),
        },
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h).to_lowercase();
    let path = path.trim_matches('/').trim_end_matches(".git").trim_end_matches('/');
    match (host.is_empty(), path.is_empty()) {
        (true, _) => path.to_string(),
        (false, true) => host,
        (false, false) => format!("{host}/{path}"),
    }
}

/// Counts of one push.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PushStats {
    pub repo: String,
    pub commit: Option<String>,
    /// Files and chunks of the workspace.
    pub files: usize,
    pub chunks: usize,
    /// Files whose rows were replaced, added or removed in the team index.
    pub changed_files: usize,
    pub removed_files: usize,
    /// Chunks uploaded by this push, and chunks of changed files the server already had (from
    /// another repository, branch, or an interrupted push).
    pub chunks_sent: usize,
    pub chunks_present: usize,
    pub seconds: f64,
}

/// What a push reports while it works.
pub enum PushProgress {
    /// `sent` of `total` missing chunks uploaded.
    Uploading { sent: usize, total: usize },
    /// The repository's file and entry rows are being replaced (one transaction).
    Publishing { files: usize },
}

/// One file of the workspace as the team index stores it.
struct LocalFile {
    path: String,
    language: &'static str,
    digest: String,
    chunks: Vec<usize>,
}

/// A chunk ready to upload.
struct Upload {
    key: String,
    vector: String,
    content: String,
    terms: String,
}

/// Pushes `snapshot` (a complete index of the workspace) as `identity`.
pub fn push(
    client: &mut Client,
    url: &TeamUrl,
    snapshot: &Snapshot,
    identity: &RepoIdentity,
    batch: usize,
    progress: &mut dyn FnMut(PushProgress),
) -> Result<PushStats, TeamError> {
    let start = Instant::now();
    if snapshot.is_partial() {
        return Err(TeamError::Repo(format!(
            "the index of {} is still being built; let `raggrep index` finish first",
            snapshot.location.root.display()
        )));
    }
    let model_id = snapshot.model_id().to_string();
    let files = local_files(snapshot);
    let mut stats = PushStats {
        repo: identity.name.clone(),
        commit: identity.commit.clone(),
        files: files.len(),
        chunks: snapshot.chunk_count(),
        ..PushStats::default()
    };

    // 1. Chunks of the files the server does not have as they are here (outside the publishing
    //    transaction, in committed batches: the slow part, and resumable).
    let before = server_digests(client, url, &identity.name)?;
    let (changed, _) = diff(&files, &before);
    let hashes: HashMap<String, u128> = snapshot.file_hashes().into_iter().collect();
    let mut texts = TextCache::default();
    let needed = keys_of(snapshot, &files, &changed, &model_id)?;
    let missing = missing_keys(client, url, needed.keys().cloned().collect())?;
    stats.chunks_present = needed.len() - missing.len();
    let total = missing.len();
    let mut sent = 0;
    // Built one batch at a time: a first push of a big repository never holds every chunk's
    // text and vector in memory at once.
    let missing: Vec<(&String, usize)> =
        needed.iter().filter(|(k, _)| missing.contains(*k)).map(|(k, &c)| (k, c)).collect();
    for group in missing.chunks(batch.max(1)) {
        let rows = uploads(snapshot, &hashes, group, &mut texts)?;
        insert_chunks(&mut *client, url, &rows)?;
        sent += rows.len();
        progress(PushProgress::Uploading { sent, total });
    }
    stats.chunks_sent = sent;

    // 2. Publish: the repository's rows for changed and removed files, in one transaction. The
    //    repository row is locked first and the digests read again under the lock, so a
    //    concurrent push of the same repository waits and then sees what the first one wrote.
    let mut tx = client.transaction().map_err(|e| url.db_error(&e))?;
    let repo_id: i64 = tx
        .query_one(
            "INSERT INTO raggrep.repo (name, remote, branch, commit) VALUES ($1, $2, $3, $4)
             ON CONFLICT (name) DO UPDATE SET remote = excluded.remote, branch = excluded.branch,
                 commit = excluded.commit, pushed_at = now()
             RETURNING id",
            &[&identity.name, &identity.remote, &identity.branch, &identity.commit],
        )
        .map_err(|e| url.db_error(&e))?
        .get(0);
    let now = server_digests(&mut tx, url, &identity.name)?;
    let (changed, removed) = diff(&files, &now);
    progress(PushProgress::Publishing { files: changed.len() + removed.len() });
    // A concurrent push may have changed what is there since step 1: whatever is still missing
    // goes in inside the transaction.
    let needed = keys_of(snapshot, &files, &changed, &model_id)?;
    let late = missing_keys(&mut tx, url, needed.keys().cloned().collect())?;
    let late: Vec<(&String, usize)> = needed.iter().filter(|(k, _)| late.contains(*k)).map(|(k, &c)| (k, c)).collect();
    for group in late.chunks(batch.max(1)) {
        let rows = uploads(snapshot, &hashes, group, &mut texts)?;
        insert_chunks(&mut tx, url, &rows)?;
        stats.chunks_sent += rows.len();
    }
    let gone: Vec<&str> =
        changed.iter().map(|&f| files[f].path.as_str()).chain(removed.iter().map(String::as_str)).collect();
    for group in gone.chunks(ROWS_PER_STATEMENT) {
        tx.execute("DELETE FROM raggrep.file WHERE repo_id = $1 AND path = ANY($2)", &[&repo_id, &group])
            .map_err(|e| url.db_error(&e))?;
    }
    for group in changed.chunks(ROWS_PER_STATEMENT) {
        let paths: Vec<&str> = group.iter().map(|&f| files[f].path.as_str()).collect();
        let digests: Vec<&str> = group.iter().map(|&f| files[f].digest.as_str()).collect();
        let languages: Vec<&str> = group.iter().map(|&f| files[f].language).collect();
        tx.execute(
            "INSERT INTO raggrep.file (repo_id, path, digest, language)
             SELECT $1, p, d, l FROM unnest($2::text[], $3::text[], $4::text[]) AS t(p, d, l)",
            &[&repo_id, &paths, &digests, &languages],
        )
        .map_err(|e| url.db_error(&e))?;
    }
    let entries: Vec<(usize, &LocalFile)> = changed
        .iter()
        .flat_map(|&f| {
            let file = &files[f];
            file.chunks.iter().map(move |&c| (c, file))
        })
        .collect();
    for group in entries.chunks(ROWS_PER_STATEMENT) {
        insert_entries(&mut tx, url, snapshot, &model_id, repo_id, group)?;
    }
    tx.execute(
        "UPDATE raggrep.repo SET chunks = (SELECT count(*) FROM raggrep.entry WHERE repo_id = $1) WHERE id = $1",
        &[&repo_id],
    )
    .map_err(|e| url.db_error(&e))?;
    tx.commit().map_err(|e| url.db_error(&e))?;
    stats.changed_files = changed.len();
    stats.removed_files = removed.len();
    stats.seconds = start.elapsed().as_secs_f64();
    Ok(stats)
}

/// The workspace's files with the digest that says whether the server's copy is current: the
/// text that was chunked and how it was chunked (a new chunker re-sends every file).
fn local_files(snapshot: &Snapshot) -> Vec<LocalFile> {
    let recipe = crate::content_hash(snapshot.recipe().as_bytes());
    let mut by_path: HashMap<String, Vec<usize>> = HashMap::new();
    for index in 0..snapshot.chunk_count() {
        if let Some(chunk) = snapshot.chunk(index) {
            by_path.entry(chunk.path.to_string()).or_default().push(index);
        }
    }
    snapshot
        .file_hashes()
        .into_iter()
        .map(|(path, hash)| {
            let chunks = by_path.remove(&path).unwrap_or_default();
            // As the index detected it (a script's `#!` line included); the path alone for a
            // file without chunks.
            let language = match chunks.first().and_then(|&index| snapshot.chunk(index)) {
                Some(chunk) => chunk.language,
                None => crate::lang::Language::from_path(Path::new(&path)),
            };
            LocalFile { language: language.name(), digest: format!("{hash:032x}-{recipe:032x}"), chunks, path }
        })
        .collect()
}

/// Indexes of `files` that the server lacks or holds differently, and server paths gone here.
fn diff(files: &[LocalFile], server: &HashMap<String, String>) -> (Vec<usize>, Vec<String>) {
    let changed = (0..files.len()).filter(|&i| server.get(&files[i].path) != Some(&files[i].digest)).collect();
    let here: HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let mut removed: Vec<String> = server.keys().filter(|p| !here.contains(p.as_str())).cloned().collect();
    removed.sort();
    (changed, removed)
}

/// The server's digest of each file of a repository (by name: none before its first push).
fn server_digests(
    client: &mut impl postgres::GenericClient,
    url: &TeamUrl,
    repo: &str,
) -> Result<HashMap<String, String>, TeamError> {
    let rows = client
        .query(
            "SELECT f.path, f.digest FROM raggrep.file f JOIN raggrep.repo r ON r.id = f.repo_id WHERE r.name = $1",
            &[&repo],
        )
        .map_err(|e| url.db_error(&e))?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// File texts read once per push.
#[derive(Default)]
struct TextCache {
    texts: HashMap<String, String>,
}

/// The team-index keys of the chunks of `changed` files, each with one chunk that has it (sorted:
/// batches go out in a stable order).
fn keys_of(
    snapshot: &Snapshot,
    files: &[LocalFile],
    changed: &[usize],
    model_id: &str,
) -> Result<BTreeMap<String, usize>, TeamError> {
    let mut out = BTreeMap::new();
    for &f in changed {
        for &index in &files[f].chunks {
            let Some(key) = snapshot.embedding_key(index) else {
                return Err(TeamError::Repo(format!(
                    "{}: a chunk is not embedded; let `raggrep index` finish first",
                    files[f].path
                )));
            };
            out.entry(chunk_key(model_id, key)).or_insert(index);
        }
    }
    Ok(out)
}

/// The rows to upload for `group` (key, chunk index). A file that changed on disk since it was
/// indexed is an error: its chunks' offsets would cut the wrong text.
fn uploads(
    snapshot: &Snapshot,
    hashes: &HashMap<String, u128>,
    group: &[(&String, usize)],
    texts: &mut TextCache,
) -> Result<Vec<Upload>, TeamError> {
    let mut out = Vec::with_capacity(group.len());
    for &(key, index) in group {
        let (Some(chunk), Some(vector)) = (snapshot.chunk(index), snapshot.chunk_vector(index)) else {
            return Err(TeamError::Repo(format!(
                "chunk {index} has no readable vector; run `raggrep index` to repair the index"
            )));
        };
        if !texts.texts.contains_key(chunk.path) {
            let abs = crate::walk::resolve(&snapshot.location.root, chunk.path);
            let source = crate::walk::read_source(&abs, u64::MAX)
                .map_err(|e| TeamError::Read { path: abs.clone(), message: e.to_string() })?;
            if hashes.get(chunk.path) != Some(&crate::content_hash(source.text.as_bytes())) {
                return Err(TeamError::Read {
                    path: abs,
                    message: "changed since it was indexed; push again (it indexes first)".into(),
                });
            }
            texts.texts.insert(chunk.path.to_string(), source.text);
        }
        let text = &texts.texts[chunk.path];
        let content = text.get(chunk.start_byte..chunk.end_byte).unwrap_or_default().replace('\0', "\u{fffd}");
        let terms = crate::index::code_tokens(&content)
            .into_iter()
            .map(|(_, _, t)| t)
            .chain(crate::index::code_tokens(chunk.path).into_iter().map(|(_, _, t)| t))
            .collect::<Vec<_>>()
            .join(" ");
        out.push(Upload { key: key.clone(), vector: vector_text(vector.as_slice()), content, terms });
    }
    Ok(out)
}

/// The team index's key of a chunk: the model and the text it embedded.
pub fn chunk_key(model_id: &str, embedding_key: u128) -> String {
    format!("{model_id}:{embedding_key:032x}")
}

/// pgvector's text form, `[0.1,-0.2,…]` (shortest round-trip digits: no precision lost).
pub fn vector_text(values: &[f32]) -> String {
    let mut out = String::with_capacity(values.len() * 12 + 2);
    out.push('[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&v.to_string());
    }
    out.push(']');
    out
}

/// Which of `keys` the server has no chunk for.
fn missing_keys(
    client: &mut impl postgres::GenericClient,
    url: &TeamUrl,
    keys: Vec<String>,
) -> Result<HashSet<String>, TeamError> {
    let mut missing: HashSet<String> = keys.iter().cloned().collect();
    for group in keys.chunks(ROWS_PER_STATEMENT) {
        let rows = client
            .query("SELECT key FROM raggrep.chunk WHERE key = ANY($1)", &[&group])
            .map_err(|e| url.db_error(&e))?;
        for row in rows {
            missing.remove(row.get::<_, &str>(0));
        }
    }
    Ok(missing)
}

fn insert_chunks(client: &mut impl postgres::GenericClient, url: &TeamUrl, rows: &[Upload]) -> Result<(), TeamError> {
    if rows.is_empty() {
        return Ok(());
    }
    let keys: Vec<&str> = rows.iter().map(|u| u.key.as_str()).collect();
    let vectors: Vec<&str> = rows.iter().map(|u| u.vector.as_str()).collect();
    let contents: Vec<&str> = rows.iter().map(|u| u.content.as_str()).collect();
    let terms: Vec<&str> = rows.iter().map(|u| u.terms.as_str()).collect();
    let params: [&(dyn ToSql + Sync); 4] = [&keys, &vectors, &contents, &terms];
    client
        .execute(
            "INSERT INTO raggrep.chunk (key, embedding, content, terms)
             SELECT k, e::vector, c, to_tsvector('simple', t)
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(k, e, c, t)
             ON CONFLICT (key) DO NOTHING",
            &params,
        )
        .map_err(|e| url.db_error(&e))?;
    Ok(())
}

fn insert_entries(
    tx: &mut postgres::Transaction<'_>,
    url: &TeamUrl,
    snapshot: &Snapshot,
    model_id: &str,
    repo_id: i64,
    group: &[(usize, &LocalFile)],
) -> Result<(), TeamError> {
    let mut paths = Vec::with_capacity(group.len());
    let mut starts = Vec::with_capacity(group.len());
    let mut ends = Vec::with_capacity(group.len());
    let mut kinds = Vec::with_capacity(group.len());
    let mut symbols = Vec::with_capacity(group.len());
    let mut containers = Vec::with_capacity(group.len());
    let mut keys = Vec::with_capacity(group.len());
    for &(index, file) in group {
        let (Some(chunk), Some(key)) = (snapshot.chunk(index), snapshot.embedding_key(index)) else { continue };
        paths.push(file.path.as_str());
        starts.push(chunk.start_line as i32);
        ends.push(chunk.end_line as i32);
        kinds.push(chunk.kind.name());
        symbols.push(chunk.symbol.to_string());
        containers.push(chunk.container.to_string());
        keys.push(chunk_key(model_id, key));
    }
    tx.execute(
        "INSERT INTO raggrep.entry (repo_id, path, start_line, end_line, kind, symbol, container, chunk_key)
         SELECT $1, p, s, e, k, y, c, h
         FROM unnest($2::text[], $3::int[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[])
             AS t(p, s, e, k, y, c, h)",
        &[&repo_id, &paths, &starts, &ends, &kinds, &symbols, &containers, &keys],
    )
    .map_err(|e| url.db_error(&e))?;
    Ok(())
}

/// The name of a kind as stored, back to the kind.
pub fn kind_from_name(name: &str) -> ChunkKind {
    ChunkKind::ALL.iter().copied().find(|k| k.name() == name).unwrap_or(ChunkKind::Code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_are_one_name_without_credentials() {
        for (remote, name) in [
            ("https://ci:ghp_token@github.com/acme/api.git", "github.com/acme/api"),
            ("git@github.com:acme/api.git", "github.com/acme/api"),
            ("ssh://git@GitHub.com/acme/api/", "github.com/acme/api"),
            ("https://gitlab.example/group/sub/proj", "gitlab.example/group/sub/proj"),
            ("/srv/git/api.git", "srv/git/api"),
        ] {
            assert_eq!(normalize_remote(remote), name, "{remote}");
        }
    }

    #[test]
    fn vectors_travel_in_pgvector_text_form() {
        assert_eq!(vector_text(&[0.5, -0.25, 1.0e-7]), "[0.5,-0.25,0.0000001]");
    }

    #[test]
    fn kinds_round_trip_through_their_names() {
        for kind in ChunkKind::ALL {
            assert_eq!(kind_from_name(kind.name()), kind);
        }
    }
}
