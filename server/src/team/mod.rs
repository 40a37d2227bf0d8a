//! The team index (issue 15): workspaces' chunks, metadata and vectors pushed to PostgreSQL with
//! pgvector, and searched across repositories with the local engine's ranking.
//!
//! Schema `raggrep` ([`schema`], created and migrated by raggrep):
//!
//! ```text
//! meta   key → value: schema version, the model and its dimension (one model per team index)
//! repo   one row per repository and branch (name = normalised git remote @ branch)
//! chunk  one row per distinct text the model saw (key = model + xxh3-128 of that text): the
//!        vector (HNSW, cosine), the code (snippets) and its search terms (GIN, full-text)
//! file   (repo, path) → digest of the text that was chunked and of the chunking recipe
//! entry  (repo, path, lines, kind, symbol) → chunk key
//! ```
//!
//! A push ([`push`]) sends only what the server lacks: chunks by key (in committed batches, so
//! an interrupted push keeps them and the next one skips them), and the rows of files whose
//! digest changed, replaced in one transaction per repository: readers see a repository as it
//! was before a push or after it, never between. Identical chunks across repositories and
//! branches are stored and embedded once.

pub mod push;
pub mod schema;
pub mod search;
pub mod source;

use std::path::PathBuf;
use std::str::FromStr;

/// Errors of the team index, each one line that says what to do. Never holds a password.
#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    #[error("invalid team index URL {url}: {message}")]
    Url { url: String, message: String },
    #[error("cannot connect to the team index at {url}: {message}")]
    Connect { url: String, message: String },
    #[error("team index at {url}: {message}")]
    Db { url: String, message: String },
    #[error("team index at {url}: {message}")]
    Schema { url: String, message: String },
    #[error("{0}")]
    Repo(String),
    /// The last failure, repeated without asking the database again for a while.
    #[error("{message} (trying again in {retry_in_s} s)")]
    Unavailable { message: String, retry_in_s: u64 },
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
    #[error(transparent)]
    Embed(#[from] crate::embed::EmbedError),
    #[error("{path}: {message}")]
    Read { path: PathBuf, message: String },
}

/// Where the team index is: a PostgreSQL connection string (URL or `key=value` form).
#[derive(Clone)]
pub struct TeamUrl {
    config: postgres::Config,
    redacted: String,
}

impl std::fmt::Debug for TeamUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted)
    }
}

impl TeamUrl {
    /// Parses a connection string. Without a password in it, `PGPASSWORD` supplies one, as
    /// libpq does: CI secrets then stay out of command lines and process listings.
    pub fn parse(raw: &str) -> Result<TeamUrl, TeamError> {
        let redacted = redact(raw);
        let mut config = postgres::Config::from_str(raw.trim())
            .map_err(|e| TeamError::Url { url: redacted.clone(), message: e.to_string() })?;
        if config.get_hosts().is_empty() {
            return Err(TeamError::Url { url: redacted, message: "no host".into() });
        }
        if config.get_password().is_none()
            && let Some(password) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty())
        {
            config.password(password.as_encoded_bytes());
        }
        if config.get_user().is_none()
            && let Ok(user) = std::env::var("PGUSER").or_else(|_| std::env::var("USER"))
        {
            config.user(&user);
        }
        config.application_name("raggrep");
        config.connect_timeout(std::time::Duration::from_secs(10));
        Ok(TeamUrl { config, redacted })
    }

    /// The same URL with another connect timeout (an editor waits less than a CI job).
    pub fn with_connect_timeout(mut self, timeout: std::time::Duration) -> TeamUrl {
        self.config.connect_timeout(timeout);
        self
    }

    /// The URL as it may be shown or logged: the password replaced by `***`.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }

    /// Opens a session. TLS is not offered: use the database on a trusted network or through a
    /// tunnel (the error says so when the server demands TLS).
    pub fn connect(&self) -> Result<postgres::Client, TeamError> {
        if self.config.get_ssl_mode() == postgres::config::SslMode::Require {
            return Err(TeamError::Connect {
                url: self.redacted.clone(),
                message: "sslmode=require, but raggrep does not speak TLS to PostgreSQL yet: reach the database on a trusted network or through an SSH tunnel, with sslmode=disable".into(),
            });
        }
        self.config
            .connect(postgres::NoTls)
            .map_err(|e| TeamError::Connect { url: self.redacted.clone(), message: db_message(&e) })
    }

    pub(crate) fn db_error(&self, err: &postgres::Error) -> TeamError {
        TeamError::Db { url: self.redacted.clone(), message: db_message(err) }
    }

    pub(crate) fn schema_error(&self, message: impl Into<String>) -> TeamError {
        TeamError::Schema { url: self.redacted.clone(), message: message.into() }
    }
}

/// The team index's URL when no flag gives one: `$RAGGREP_TEAM_URL`, then `[team] url` in the
/// workspace's `.raggrep/config.toml`, then in the user's `~/.config/raggrep/config.toml`.
/// `Ok(None)`: configured nowhere.
pub fn configured_url(workspace_config: &std::path::Path) -> Result<Option<String>, String> {
    if let Some(url) = std::env::var("RAGGREP_TEAM_URL").ok().filter(|u| !u.trim().is_empty()) {
        return Ok(Some(url));
    }
    match crate::config::configured(Some(workspace_config), "team", "url")? {
        Some((_, toml::Value::String(url))) => Ok(Some(url)),
        Some((path, _)) => Err(format!("{}: [team] url must be a string", path.display())),
        None => Ok(None),
    }
}

/// One line from a driver error: the server's message with its detail and hint, or the chain
/// of causes for a connection failure (refused, timed out, authentication).
pub(crate) fn db_message(err: &postgres::Error) -> String {
    if let Some(db) = err.as_db_error() {
        let mut out = db.message().to_string();
        if let Some(detail) = db.detail() {
            out.push_str(&format!(" ({detail})"));
        }
        if let Some(hint) = db.hint() {
            out.push_str(&format!("; {hint}"));
        }
        return out;
    }
    let mut out = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out.replace('\n', " ")
}

/// The connection string with its password hidden, in both the URL and the `key=value` form.
pub fn redact(raw: &str) -> String {
    let raw = raw.trim();
    if let Some(scheme_end) = raw.find("://") {
        let rest = &raw[scheme_end + 3..];
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        if let Some(at) = authority.rfind('@') {
            let userinfo = &authority[..at];
            if let Some(colon) = userinfo.find(':') {
                return format!(
                    "{}://{}:***{}{}",
                    &raw[..scheme_end],
                    &userinfo[..colon],
                    &authority[at..],
                    redact_query(&rest[authority_end..])
                );
            }
        }
        return format!("{}://{}{}", &raw[..scheme_end], authority, redact_query(&rest[authority_end..]));
    }
    raw.split_whitespace()
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => pair.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn redact_query(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else { return tail.to_string() };
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => p.to_string(),
        })
        .collect();
    format!("{path}?{}", params.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        for (raw, shown) in [
            ("postgres://ci:s3cret@db.internal:5432/code", "postgres://ci:***@db.internal:5432/code"),
            ("postgresql://ci:p%40ss@h/db?sslmode=disable", "postgresql://ci:***@h/db?sslmode=disable"),
            ("postgres://h/db?user=ci&password=s3cret", "postgres://h/db?user=ci&password=***"),
            ("host=h user=ci password=s3cret dbname=code", "host=h user=ci password=*** dbname=code"),
            ("postgres://ci@h/db", "postgres://ci@h/db"),
        ] {
            assert_eq!(redact(raw), shown);
        }
    }

    #[test]
    fn a_bad_url_is_one_line_without_the_password() {
        let err = TeamUrl::parse("postgres://ci:s3cret@h:notaport/db").unwrap_err().to_string();
        assert!(!err.contains("s3cret") && !err.contains('\n'), "{err}");
        assert!(err.starts_with("invalid team index URL postgres://ci:***@"), "{err}");
    }
}
