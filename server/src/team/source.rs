//! The team index as an extra, read-only source of a long-lived door (the language server).
//!
//! A door that answers every keystroke's search cannot pay a connection per query, nor wait on
//! a database that is down: one connection is kept between queries, connecting gives up after
//! a few seconds, and after a failure the source answers at once with the last error until
//! [`RETRY_AFTER`] has passed.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use postgres::Client;

use super::push::identify;
use super::schema::IndexModel;
use super::search::{MAX_K, TeamQuery, TeamResults, search};
use super::{TeamError, TeamUrl};
use crate::embed::Embedder;
use crate::search::Query;
use crate::workspace::TeamSetting;

/// How long a failed source stays quiet before it tries the database again.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);
/// How long connecting may take before the search goes on without the team index.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

pub struct TeamSource {
    url: TeamUrl,
    model: IndexModel,
    exclude_remotes: Vec<String>,
    connection: Mutex<Connection>,
}

#[derive(Default)]
struct Connection {
    client: Option<Client>,
    failed: Option<(Instant, String)>,
}

impl TeamSource {
    /// A source reading vectors of `model`; every branch of `exclude_remotes` is left out of
    /// its results (the door has those repositories checked out).
    pub fn new(url: TeamUrl, model: IndexModel, exclude_remotes: Vec<String>) -> TeamSource {
        TeamSource {
            url: url.with_connect_timeout(CONNECT_TIMEOUT),
            model,
            exclude_remotes,
            connection: Mutex::new(Connection::default()),
        }
    }

    /// The database, as it may be shown (password hidden).
    pub fn redacted_url(&self) -> &str {
        self.url.redacted()
    }

    pub fn excluded_remotes(&self) -> &[String] {
        &self.exclude_remotes
    }

    /// A local search's query against the team index: its language and path filters apply to
    /// the team's paths too (more candidates are asked for, so filtering still leaves `k`).
    pub fn search_like(&self, embedder: Option<&dyn Embedder>, query: &Query) -> Result<TeamResults, TeamError> {
        let glob = crate::search::path_matcher(query).map_err(|e| TeamError::Repo(e.to_string()))?;
        let filtered = glob.is_some() || query.language.is_some();
        let team_query = TeamQuery {
            text: query.text.clone(),
            k: if filtered { query.k.saturating_mul(4).min(MAX_K) } else { query.k },
            mode: query.mode,
            repo_glob: None,
            exclude_remotes: Vec::new(),
        };
        let mut results = self.search(embedder, &team_query)?;
        results.results.retain(|h| {
            glob.as_ref().is_none_or(|g| g.is_match(&h.hit.path)) && query.language.is_none_or(|l| l == h.hit.language)
        });
        results.results.truncate(query.k);
        Ok(results)
    }

    /// Searches the team index; `query.exclude_remotes` is extended with this source's own.
    pub fn search(&self, embedder: Option<&dyn Embedder>, query: &TeamQuery) -> Result<TeamResults, TeamError> {
        let mut connection = self.connection.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((at, message)) = &connection.failed
            && at.elapsed() < RETRY_AFTER
        {
            return Err(TeamError::Unavailable {
                message: message.clone(),
                retry_in_s: RETRY_AFTER.saturating_sub(at.elapsed()).as_secs().max(1),
            });
        }
        if connection.client.as_ref().is_none_or(Client::is_closed) {
            connection.client = None;
            match self.url.connect() {
                Ok(client) => connection.client = Some(client),
                Err(err) => {
                    connection.failed = Some((Instant::now(), err.to_string()));
                    return Err(err);
                }
            }
        }
        let Some(client) = connection.client.as_mut() else {
            return Err(TeamError::Unavailable {
                message: format!("no connection to the team index at {}", self.url.redacted()),
                retry_in_s: 1,
            });
        };
        let mut query = query.clone();
        query.exclude_remotes.extend(self.exclude_remotes.iter().cloned());
        let result = search(client, &self.url, embedder, &self.model, &query);
        match &result {
            Ok(_) => connection.failed = None,
            // A dropped connection (the server restarted) is opened again after the pause; a
            // query error on a live connection (no index yet, another model) is not a reason to
            // pause, the next search may succeed.
            Err(err) if client.is_closed() => {
                connection.client = None;
                connection.failed = Some((Instant::now(), err.to_string()));
            }
            Err(_) => {}
        }
        result
    }
}

/// The source a door's `team` setting asks for, or `None` when it asks for none. Every root
/// that is a git checkout with a remote has that remote excluded. Errors are one line each (no
/// URL configured, a bad URL).
pub fn from_setting(
    setting: &TeamSetting,
    roots: &[PathBuf],
    model: IndexModel,
) -> Result<Option<TeamSource>, TeamError> {
    let raw = match setting {
        TeamSetting::Configured(false) => return Ok(None),
        TeamSetting::Url(url) if url.trim().is_empty() => return Ok(None),
        TeamSetting::Url(url) => url.clone(),
        TeamSetting::Configured(true) => {
            let mut found = None;
            for root in roots.iter().map(Some).chain(roots.is_empty().then_some(None)) {
                let workspace_config = match root {
                    Some(root) => crate::workspace::FolderIndex::of(root)?.location.dir.join("config.toml"),
                    None => PathBuf::new(),
                };
                if let Some(url) = super::configured_url(&workspace_config).map_err(TeamError::Repo)? {
                    found = Some(url);
                    break;
                }
            }
            found.ok_or_else(|| {
                TeamError::Repo(
                    "the `team` setting is on, but no team index is configured: set RAGGREP_TEAM_URL, `[team] url` in .raggrep/config.toml or ~/.config/raggrep/config.toml, or give the URL as the setting".into(),
                )
            })?
        }
    };
    let url = TeamUrl::parse(&raw)?;
    // Only the remote matters here (every branch of it is left out), so any branch name does.
    let mut exclude: Vec<String> =
        roots.iter().filter_map(|root| identify(root, None, Some("-")).ok().and_then(|id| id.remote)).collect();
    exclude.sort();
    exclude.dedup();
    Ok(Some(TeamSource::new(url, model, exclude)))
}
