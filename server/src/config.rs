//! Where configuration lives and how one key is read: a project's `.raggrep/config.toml`, then
//! the user's file. Below the engine, so that the parts reading a key (`ask`'s LLM settings, the
//! team index's URL, the CLI's bare questions) need not know the workspace.

use std::path::{Path, PathBuf};

/// The user's config file: `$XDG_CONFIG_HOME/raggrep/config.toml` (`~/.config/…`).
pub fn user_config_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(base.join("raggrep").join("config.toml"))
}

/// The first `[table] key` set in the workspace's config file (when there is one), else in the
/// user's ([`user_config_file`]), with the file it is in. A file that is not TOML is an error
/// naming it; an absent file, table or key is passed over.
pub fn configured(
    workspace_config: Option<&Path>,
    table: &str,
    key: &str,
) -> Result<Option<(PathBuf, toml::Value)>, String> {
    for path in [workspace_config.map(Path::to_path_buf), user_config_file()].into_iter().flatten() {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let value: toml::Value = toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))?;
        if let Some(found) = value.get(table).and_then(|t| t.get(key)) {
            return Ok(Some((path, found.clone())));
        }
    }
    Ok(None)
}
