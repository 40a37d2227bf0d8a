//! A workspace's settings: the doors' settings map, `.raggrep/config.toml`, the user's config
//! file, and which index a folder uses.

use super::*;

/// User settings of a workspace (the language server's settings map onto these).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Settings {
    pub enabled: bool,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub max_file_size: u64,
    /// Memory budget for the indexes, in MB: warn at 80 %, stop adding at 95 %.
    pub memory_budget_mb: u64,
    pub model_dir: Option<String>,
    pub default_k: usize,
    pub log_level: String,
    /// The team index as an extra, read-only source of searches.
    pub team: TeamSetting,
    /// Threads the model uses to embed while indexing; 0 = one per CPU. Read when the model
    /// loads (at start).
    pub index_threads: usize,
    /// CPU priority of indexing (`low`: below the editor and searches). Read at start.
    pub index_priority: IndexPriority,
}

/// `false` (the default): local results only. `true`: also the team index configured for the
/// CLI (`$RAGGREP_TEAM_URL`, `[team] url` in `.raggrep/config.toml` or the user's config). A
/// string: that team index (`postgres://USER@HOST/DB`; the password comes from `PGPASSWORD`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TeamSetting {
    Configured(bool),
    Url(String),
}

impl Default for TeamSetting {
    fn default() -> Self {
        TeamSetting::Configured(false)
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            include: Vec::new(),
            exclude: Vec::new(),
            max_file_size: WalkOptions::default().max_file_size,
            memory_budget_mb: 500,
            model_dir: None,
            default_k: 10,
            log_level: "info".into(),
            team: TeamSetting::default(),
            index_threads: 0,
            index_priority: IndexPriority::default(),
        }
    }
}

impl Settings {
    /// Whether moving from `self` to `other` changes what is indexed (the team index, the
    /// result count, the log level and the indexer's threads and priority do not: no re-scan
    /// for them).
    pub fn indexing_differs(&self, other: &Settings) -> bool {
        let searching_only = |s: &Settings| Settings {
            team: TeamSetting::default(),
            index_threads: 0,
            index_priority: IndexPriority::default(),
            default_k: 0,
            log_level: String::new(),
            ..s.clone()
        };
        searching_only(self) != searching_only(other)
    }

    /// How a long-running front door loads the model for this workspace: indexing threads and
    /// priority as set, queries at normal priority.
    pub fn embed_options(&self) -> EmbedOptions {
        EmbedOptions {
            threads: self.index_threads,
            background: self.index_priority == IndexPriority::Low,
            ..EmbedOptions::default()
        }
    }

    pub(super) fn index_options(&self) -> IndexOptions {
        let budget_chunks = (self.memory_budget_mb * 1_000_000 * 95 / 100) / BYTES_PER_CHUNK;
        IndexOptions {
            walk: WalkOptions {
                max_file_size: self.max_file_size,
                exclude: self.exclude.clone(),
                include: self.include.clone(),
                ..WalkOptions::default()
            },
            max_chunks: Some(budget_chunks as usize),
            shared_cache: crate::index::SharedCacheConfig::from_env(),
            ..IndexOptions::default()
        }
    }
}

/// Per-project settings persisted in `.raggrep/config.toml`: the user's answer to "index this
/// workspace?" and the on/off toggle.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProjectConfig {
    pub enabled: Option<bool>,
    /// The audit log (`audit.jsonl`); on unless set to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<bool>,
    /// How `raggrep ask` reaches an LLM ([`crate::ask::LlmSettings`] reads it): kept as it is
    /// written, so saving the toggle keeps it even when it does not parse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<toml::Value>,
    /// Where the team index is (`[team] url`, [`crate::team::configured_url`] reads it): kept
    /// as written, like `llm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team: Option<toml::Value>,
    /// The command line's own settings (`[cli] bare`: what a bare question runs), kept as
    /// written like `llm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cli: Option<toml::Value>,
}

impl ProjectConfig {
    pub fn load(location: &IndexLocation) -> ProjectConfig {
        std::fs::read_to_string(location.dir.join("config.toml"))
            .ok()
            .and_then(|text| toml::from_str(&text).ok())
            .unwrap_or_default()
    }

    pub fn save(&self, location: &IndexLocation) -> Result<(), IndexError> {
        index::prepare_dir(location)?;
        let text = toml::to_string(self).map_err(|e| IndexError::Corrupt(e.to_string()))?;
        let path = location.dir.join("config.toml");
        index::write_atomic(&path, text.as_bytes()).map_err(|e| IndexError::io(&path, e))
    }
}

/// The index a workspace folder uses.
#[derive(Debug, Clone)]
pub struct FolderIndex {
    /// The folder, canonical.
    pub root: PathBuf,
    /// Its own index, or the enclosing project's.
    pub location: IndexLocation,
    /// Where the folder lies in the index's tree (`""`: the index is the folder's own).
    pub subtree: String,
}

impl FolderIndex {
    /// The index a workspace folder (an editor's folder, an agent's root) uses, found as the
    /// CLI finds it ([`index::discover`]): a folder inside a project indexed higher up uses that
    /// project's index, seeing and updating only its own files (one index, not one per folder);
    /// any other folder (a nested repository or a folder with an index of its own included)
    /// has its own. A folder in a git work tree without an index gets its own: a server never
    /// starts an index above the folder it was given.
    pub fn of(folder: &Path) -> Result<FolderIndex, IndexError> {
        let own = IndexLocation::new(folder, None)?;
        if let Ok(found) = index::discover(&own.root, &index::Ceilings::from_env())
            && found.found == index::Found::Index
            && !found.subtree.is_empty()
            && let Ok(location) = IndexLocation::new(&found.root, None)
            && location.exists()
        {
            return Ok(FolderIndex { root: own.root, location, subtree: found.subtree });
        }
        Ok(FolderIndex { root: own.root.clone(), location: own, subtree: String::new() })
    }
}

/// Files whose presence says "this directory is a project".
const PROJECT_MARKERS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "CMakeLists.txt",
    "Makefile",
    "meson.build",
    "Gemfile",
    "composer.json",
    "deno.json",
    "tsconfig.json",
    ".raggrep",
];

/// Whether `root` is clearly a project (a VCS or build marker at its top).
pub fn looks_like_project(root: &Path) -> bool {
    PROJECT_MARKERS.iter().any(|m| root.join(m).exists())
}
