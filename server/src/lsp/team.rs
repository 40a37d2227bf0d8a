//! The team index as an extra, read-only source of `raggrep.search` (the `team` setting).
//!
//! Its hits come in their own section of the answer: they are files of other repositories,
//! not on this machine, and their scores come from another candidate set. A team index that
//! is down or misconfigured never fails the local search; the section says why it is empty.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::engine::Embedder;
use crate::engine::{Mode, Query};
use crate::engine::{TeamSetting, Workspace};
use crate::team::schema::IndexModel;
use crate::team::source::{TeamSource, from_setting};
use crate::wire;

/// The source for the current setting and roots, rebuilt when either changes.
#[derive(Default)]
pub(super) struct TeamCache {
    built_for: Option<(TeamSetting, Vec<PathBuf>)>,
    source: Option<Result<Arc<TeamSource>, String>>,
}

/// The team section of a search's answer, or `None` when the setting asks for no team index.
pub(super) fn section(cache: &Mutex<TeamCache>, workspace: &Workspace, query: &Query) -> Option<wire::TeamSection> {
    let setting = workspace.settings().team;
    let roots = workspace.roots();
    let source = {
        let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (setting.clone(), roots.clone());
        if cache.built_for.as_ref() != Some(&key) {
            let info = workspace.embedder().info();
            let model = IndexModel::of(info);
            cache.source = match from_setting(&setting, &roots, model) {
                Ok(None) => None,
                Ok(Some(source)) => {
                    tracing::info!(
                        "team index {} added to searches (leaving out {})",
                        source.redacted_url(),
                        if source.excluded_remotes().is_empty() {
                            "nothing".to_string()
                        } else {
                            source.excluded_remotes().join(", ")
                        }
                    );
                    Some(Ok(Arc::new(source)))
                }
                Err(err) => {
                    tracing::warn!("team index not added to searches: {err}");
                    Some(Err(err.to_string()))
                }
            };
            cache.built_for = Some(key);
        }
        cache.source.clone()?
    };
    let started = Instant::now();
    let source = match source {
        Ok(source) => source,
        Err(message) => {
            return Some(wire::TeamSection {
                source: configured_name(&setting),
                took_ms: 0.0,
                results: Vec::new(),
                error: Some(message),
            });
        }
    };
    let embedder: Option<&dyn Embedder> = (query.mode != Mode::Lexical).then(|| workspace.embedder().as_ref());
    let (results, error) = match source.search_like(embedder, query) {
        Ok(found) => (found.results.iter().map(wire::Hit::from_team).collect(), None),
        Err(err) => {
            tracing::warn!("team index search failed: {err}");
            (Vec::new(), Some(err.to_string()))
        }
    };
    Some(wire::TeamSection {
        source: source.redacted_url().to_string(),
        took_ms: started.elapsed().as_secs_f64() * 1000.0,
        results,
        error,
    })
}

fn configured_name(setting: &TeamSetting) -> String {
    match setting {
        TeamSetting::Url(url) => crate::team::redact(url),
        TeamSetting::Configured(_) => "the configured team index".into(),
    }
}
