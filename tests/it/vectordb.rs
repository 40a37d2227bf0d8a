//! `raggrep db`, the vector store of design seed 002, through the real binary and the real model:
//! every action in human and JSON output, every error of the seed's list with the database
//! byte-for-byte unchanged after it, the migration of key-less rows, and the remembered
//! database choice.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        Workspace { dir: tempfile::tempdir().unwrap() }
    }

    /// The canonical root (what the binary reports paths against).
    fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    fn default_db(&self) -> PathBuf {
        self.root().join(".raggrep/vectordb.sqlite")
    }

    fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let path = self.root().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, bytes).unwrap();
        path
    }

    fn command(&self, args: &[&str], unprivileged: bool) -> Output {
        let bin = env!("CARGO_BIN_EXE_raggrep");
        // Root reads and writes anything whatever the permissions say: unreadable files and
        // read-only directories are tested without the capabilities that let it.
        let mut command = if unprivileged && is_root() {
            let mut c = Command::new("setpriv");
            c.args(["--bounding-set", "-dac_override,-dac_read_search", bin]);
            c
        } else {
            Command::new(bin)
        };
        command
            .args(["db"])
            .args(args)
            .current_dir(self.root())
            .env_remove("RAGGREP_INDEX_DIR")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn db(&self, args: &[&str]) -> Output {
        self.command(args, false)
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.db(args);
        assert!(out.status.success(), "raggrep db {args:?} failed ({}):\n{}", out.status, stderr(&out));
        out
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        let out = self.ok(&args);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&out)))
    }

    /// The command fails with exit 2 and one line on stderr containing `needle`.
    fn fails(&self, args: &[&str], needle: &str) -> String {
        check_failure(self.db(args), args, needle)
    }
}

fn check_failure(out: Output, args: &[&str], needle: &str) -> String {
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "raggrep db {args:?} should fail: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout on error: {}", stdout(&out));
    let first = err.lines().next().unwrap_or_default();
    assert!(first.contains(needle), "raggrep db {args:?}: {first:?} should say {needle:?}");
    err
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn is_uuid(key: &str) -> bool {
    key.len() == 36
        && key.chars().filter(|c| *c == '-').count() == 4
        && key.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
}

/// The first values `raggrep embed --document` prints for `text` with `model` (None: the default).
fn embedded_first_values(model: Option<&str>, text: &str) -> Vec<f32> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_raggrep"));
    if let Some(model) = model {
        command.args(["--model", model]);
    }
    let out = command.args(["embed", "--document", text]).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let line = stdout(&out).lines().find_map(|l| l.strip_prefix("first: [").map(str::to_string)).unwrap();
    line.trim_end_matches(']').split(", ").map(|v| v.parse().unwrap()).collect()
}

/// The first 8 values of the first stored row's embedding (`db list --json`).
fn first_stored_values(ws: &Workspace) -> Vec<f32> {
    let rows = ws.json(&["list"]);
    rows[0]["embedding"].as_array().unwrap()[..8].iter().map(|v| v.as_f64().unwrap() as f32).collect()
}

#[test]
fn the_store_embeds_with_all_minilm_itself_unless_told_otherwise() {
    // Seed 002's stack writes all-MiniLM-L6-v2 vectors; the code index's default model is that
    // network fine-tuned for code, so the store keeps the plain one (and `--model` still rules).
    let text = "banana bread baking instructions with ripe bananas";
    let plain = embedded_first_values(Some("all-minilm-l6-v2-int8"), text);
    let code = embedded_first_values(None, text);
    let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-4);
    assert!(!close(&plain, &code), "the default model is not the plain one: {plain:?} vs {code:?}");

    let ws = Workspace::new();
    ws.ok(&["store", text, "recipe"]);
    let stored = first_stored_values(&ws);
    assert!(close(&stored, &plain), "stored {stored:?}, all-MiniLM-L6-v2 {plain:?}");

    let other = Workspace::new();
    let out = Command::new(env!("CARGO_BIN_EXE_raggrep"))
        .args(["--model", "all-minilm-l6-v2-code2-int8", "db", "store", text, "recipe"])
        .current_dir(other.root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let stored = first_stored_values(&other);
    assert!(close(&stored, &code), "--model names the store's model: {stored:?} vs {code:?}");
}

#[test]
fn every_action_in_human_and_json_output() {
    let ws = Workspace::new();
    // store: the key alone on stdout (human), {key, updated} with --json.
    let apple = stdout(&ws.ok(&["store", "apple computer", "fruit company / hardware vendor"])).trim().to_string();
    assert!(is_uuid(&apple), "{apple:?}");
    let banana = ws.json(&["store", "banana bread baking instructions", "recipe"]);
    assert_eq!(banana["updated"], false);
    let banana = banana["key"].as_str().unwrap().to_string();
    assert!(is_uuid(&banana) && banana != apple);
    let rust = ws.json(&["store", "the Rust borrow checker rejects aliasing mutable references", "compiler"]);
    let rust = rust["key"].as_str().unwrap().to_string();
    assert!(ws.default_db().is_file(), "the default database lives in .raggrep/");

    // The same embedding_text again: value and embedding replaced, key kept.
    let again = ws.ok(&["store", "apple computer", "hardware vendor"]);
    assert_eq!(stdout(&again).trim(), apple);
    assert!(stderr(&again).contains("replaced"), "{}", stderr(&again));
    let again = ws.json(&["store", "apple computer", "laptop and phone maker"]);
    assert_eq!((again["key"].as_str(), again["updated"].as_bool()), (Some(apple.as_str()), Some(true)));

    // retrieve
    assert_eq!(stdout(&ws.ok(&["retrieve", &apple])), "laptop and phone maker\n");
    let got = ws.json(&["retrieve", &banana]);
    assert_eq!(got["value"], "recipe");
    assert_eq!(got["embedding_text"], "banana bread baking instructions");
    assert_eq!(got["found"], true);

    // list: three rows in insertion order; --json has 384-d unit embeddings; limit and offset.
    let listed = ws.ok(&["list"]);
    let lines: Vec<String> = stdout(&listed).lines().map(String::from).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].starts_with(&apple) && lines[0].contains("apple computer") && lines[0].contains("[384-d]"));
    let all = ws.json(&["list"]);
    assert_eq!(all.as_array().unwrap().len(), 3, "seed 002: list answers with the array of rows");
    let rows = all.as_array().unwrap();
    let fields = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(fields(&rows[0]), ["embedding", "embedding_text", "key", "value"], "exactly the seed's fields");
    // What the seed's answer has no room for goes to stderr.
    assert!(stderr(&ws.ok(&["list", "--json"])).contains("3 of 3 rows (offset 0)"));
    let keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(keys, [apple.as_str(), banana.as_str(), rust.as_str()]);
    for row in rows {
        let embedding: Vec<f64> = row["embedding"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(embedding.len(), 384);
        let norm = embedding.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "unit length: {norm}");
    }
    let page = ws.json(&["list", "--limit", "1", "--offset", "1"]);
    assert_eq!(page.as_array().unwrap().len(), 1);
    assert_eq!(page[0]["key"], banana.as_str());

    // search: closest first by cosine distance, ascending; default topK 5 (all 3 here).
    let found = ws.json(&["search", "a company that sells laptops"]);
    let results = found.as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["key"], apple.as_str(), "{found}");
    let scores: Vec<f64> = results.iter().map(|r| r["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] <= w[1]), "ascending: {scores:?}");
    assert!(scores.iter().all(|s| (0.0..=2.0).contains(s)), "cosine distances: {scores:?}");
    assert_eq!(fields(&results[0]), ["embedding_text", "key", "score", "value"], "exactly the seed's fields");
    assert_eq!(results[0]["embedding_text"], "apple computer");
    assert_eq!(results[0]["value"], "laptop and phone maker");
    for flag in ["-k", "--top-k", "--topK"] {
        let top = ws.json(&["search", "how do I bake bread", flag, "1"]);
        assert_eq!(top.as_array().unwrap().len(), 1, "{flag}");
        assert_eq!(top[0]["key"], banana.as_str(), "{flag}");
    }
    let human = stdout(&ws.ok(&["search", "memory safety in a systems language", "-k", "2"]));
    let first = human.lines().next().unwrap();
    assert!(first.contains(&rust) && first.contains("borrow checker"), "{human}");
    assert_eq!(human.lines().count(), 2);

    // delete: the key; a second time a warning and exit 0.
    assert_eq!(stdout(&ws.ok(&["delete", &banana])).trim(), banana);
    let absent = ws.ok(&["delete", &banana]);
    assert!(stdout(&absent).is_empty() && stderr(&absent).contains("warning: no row with key"), "{}", stderr(&absent));
    let absent = ws.json(&["delete", &banana]);
    assert_eq!((absent["deleted"].as_bool(), absent["key"].as_str()), (Some(false), Some(banana.as_str())));
    assert!(absent["warning"].as_str().unwrap().contains("no row"));
    let missing = ws.ok(&["retrieve", &banana]);
    assert!(stdout(&missing).is_empty() && stderr(&missing).contains("no row with key"), "{}", stderr(&missing));
    assert_eq!(ws.json(&["retrieve", &banana])["found"], false);
    assert_eq!(ws.json(&["list"]).as_array().unwrap().len(), 2);

    // The audit log counts the actions, never their texts or values.
    let audit = fs::read_to_string(ws.root().join(".raggrep/audit.jsonl")).unwrap();
    let entries: Vec<Value> = audit.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let actions: Vec<&str> = entries
        .iter()
        .filter(|e| e["op"] == "vector_db" && e["door"] == "cli")
        .filter_map(|e| e["action"].as_str())
        .collect();
    for action in ["store", "retrieve", "list", "search", "delete"] {
        assert!(actions.contains(&action), "{action} not in the audit log: {audit}");
    }
    assert!(!audit.contains("apple") && !audit.contains("laptop"), "no texts in the audit log: {audit}");
}

#[test]
fn import_file_stores_text_with_its_path() {
    let ws = Workspace::new();
    let notes = ws.write("docs/release.md", b"# Releasing\n\nBump the version, tag the release, publish the wheel.\n");
    ws.write("docs/cooking.md", b"Knead the dough for ten minutes, then let it rise.\n");
    let imported = ws.json(&["import-file", "docs/release.md"]);
    assert_eq!(imported["path"], notes.display().to_string());
    let key = imported["key"].as_str().unwrap().to_string();
    // The seed's spelling works too; the same file again updates its row.
    let other = stdout(&ws.ok(&["import_file", "docs/cooking.md"])).trim().to_string();
    assert!(is_uuid(&other));
    let again = ws.json(&["import-file", &notes.display().to_string()]);
    assert_eq!((again["key"].as_str(), again["updated"].as_bool()), (Some(key.as_str()), Some(true)));
    let row = ws.json(&["retrieve", &key]);
    assert_eq!(row["value"], notes.display().to_string(), "the path is the value");
    assert!(row["embedding_text"].as_str().unwrap().starts_with("# Releasing"), "the contents are the text");
    let hit = ws.json(&["search", "how to publish a new version", "-k", "1"]);
    assert_eq!(hit[0]["key"], key.as_str());
}

/// Every failure of the seed's list: exit 2, one clear line, and the database file unchanged.
#[test]
fn errors_are_one_line_and_leave_the_database_unchanged() {
    let ws = Workspace::new();
    let kept = ws.json(&["store", "a row that must survive every error", "kept"]);
    let db = ws.default_db();
    let before = fs::read(&db).unwrap();
    let unchanged = |what: &str| assert!(fs::read(&db).unwrap() == before, "{what} changed the database");

    ws.write("empty.txt", b"");
    ws.write("blank.txt", b"  \n\t\n");
    ws.write("blob.bin", b"\x7fELF\x00\x01\x02\x00binary");
    ws.write("latin1.txt", b"caf\xe9 cr\xe8me\n");
    ws.write("dir/inner.txt", b"inside a directory\n");
    ws.write("huge.txt", &b"x".repeat(1024 * 1024 + 1));
    let secret = ws.write("secret.txt", b"nobody may read this\n");
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    fs::write(outside.path(), "outside the workspace\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.root().join("link.txt")).unwrap();

    let cases: &[(&[&str], &str)] = &[
        (&["import-file", "nope.txt"], "no such file"),
        (&["import-file", "empty.txt"], "empty"),
        (&["import-file", "blank.txt"], "empty"),
        (&["import-file", "blob.bin"], "binary"),
        (&["import-file", "latin1.txt"], "binary"),
        (&["import-file", "dir"], "a directory"),
        (&["import-file", "huge.txt"], "larger than"),
        (&["import-file", outside.path().to_str().unwrap()], "outside the workspace"),
        (&["import-file", "link.txt"], "outside the workspace"),
        (&["import-file", "../escape.txt"], "outside the workspace"),
        (&["store", "only the text"], "required"),
        (&["store", "   ", "value"], "embedding_text is empty"),
        (&["retrieve"], "required"),
        (&["upsert", "x"], "unrecognized subcommand"),
        (&["retrieve", "not-a-uuid"], "not a UUID"),
        (&["delete", "12345"], "not a UUID"),
        (&["search", "  "], "query is empty"),
        (&["search", "x", "-k", "0"], "at least 1"),
        (&["list", "--limit", "ten"], "invalid value"),
        (&["set-database", "x.sqlite", "--db", "y.sqlite"], "leave out --db"),
    ];
    for (args, needle) in cases {
        ws.fails(args, needle);
        unchanged(&format!("{args:?}"));
    }
    let err =
        check_failure(ws.command(&["import-file", "secret.txt"], true), &["import-file", "secret.txt"], "cannot read");
    assert!(err.contains("ermission denied"), "{err}");
    unchanged("an unreadable file");

    // Database paths: a missing directory, a read-only directory, a read-only file, a
    // directory, and a file that is not SQLite (left as it was).
    ws.fails(&["list", "--db", "no/such/dir/v.sqlite"], "does not exist");
    ws.fails(&["store", "x", "y", "--db", "no/such/dir/v.sqlite"], "does not exist");
    assert!(!ws.root().join("no").exists());
    let ro = ws.root().join("ro");
    fs::create_dir(&ro).unwrap();
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
    check_failure(ws.command(&["store", "x", "y", "--db", "ro/v.sqlite"], true), &["ro"], "cannot be written");
    assert!(!ro.join("v.sqlite").exists());
    let frozen = ws.root().join("frozen.sqlite");
    fs::copy(&db, &frozen).unwrap();
    fs::set_permissions(&frozen, fs::Permissions::from_mode(0o444)).unwrap();
    check_failure(ws.command(&["store", "x", "y", "--db", "frozen.sqlite"], true), &["frozen"], "cannot be written");
    assert!(fs::read(&frozen).unwrap() == before, "a read-only database is left alone");
    // Reading a read-only database works.
    let listed = ws.command(&["list", "--db", "frozen.sqlite", "--json"], true);
    assert!(listed.status.success(), "{}", stderr(&listed));
    ws.fails(&["list", "--db", "dir"], "a directory");
    let corrupt = ws.write("corrupt.sqlite", &b"this is not a database, just text\n".repeat(200));
    let corrupt_bytes = fs::read(&corrupt).unwrap();
    for args in [&["list", "--db", "corrupt.sqlite"][..], &["store", "x", "y", "--db", "corrupt.sqlite"][..]] {
        ws.fails(args, "not a vector database");
        assert!(fs::read(&corrupt).unwrap() == corrupt_bytes, "{args:?} changed the corrupt file");
    }
    // A SQLite database whose vector_store lacks the seed's columns.
    let foreign = ws.root().join("foreign.sqlite");
    rusqlite::Connection::open(&foreign).unwrap().execute_batch("CREATE TABLE vector_store (x INTEGER)").unwrap();
    ws.fails(&["list", "--db", "foreign.sqlite"], "no embedding_text column");
    unchanged("errors on other databases");

    // Vectors of another dimension (another model wrote them): embedding actions refuse.
    let other_model = ws.root().join("other-model.sqlite");
    raggrep::vectordb::VectorDb::open(&other_model).unwrap().insert("sixteen", "d", &[0.25; 16]).unwrap();
    let other_bytes = fs::read(&other_model).unwrap();
    ws.fails(&["store", "x", "y", "--db", "other-model.sqlite"], "16-dimensional");
    ws.fails(&["search", "x", "--db", "other-model.sqlite"], "16-dimensional");
    assert!(fs::read(&other_model).unwrap() == other_bytes);

    assert_eq!(ws.json(&["retrieve", kept["key"].as_str().unwrap()])["value"], "kept");
    unchanged("the checks");
}

#[test]
fn key_less_rows_get_a_uuid_on_open() {
    let ws = Workspace::new();
    let path = ws.root().join("legacy.sqlite");
    let vector: Vec<u8> = (0..384).flat_map(|i| if i == 0 { 1.0f32 } else { 0.0 }.to_le_bytes()).collect();
    {
        // The seed's schema with rows written before keys existed, and an older table without
        // the key column at all.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE vector_store (key TEXT PRIMARY KEY, embedding_text TEXT UNIQUE, value TEXT, embedding VECTOR(384))",
        )
        .unwrap();
        for (text, key) in
            [("first", None), ("second", Some("")), ("third", Some("6f1c0c1e-8a53-4f4e-9d5a-1c2b3d4e5f60"))]
        {
            conn.execute(
                "INSERT INTO vector_store (key, embedding_text, value, embedding) VALUES (?1, ?2, 'v', ?3)",
                rusqlite::params![key, text, vector],
            )
            .unwrap();
        }
    }
    let out = ws.ok(&["list", "--db", "legacy.sqlite", "--json"]);
    assert!(stderr(&out).contains("gave 2 key-less rows a UUID key"), "{}", stderr(&out));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<String> = listed.as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap().into()).collect();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| is_uuid(k)), "{keys:?}");
    assert_eq!(keys[2], "6f1c0c1e-8a53-4f4e-9d5a-1c2b3d4e5f60", "existing keys are kept");
    assert_ne!(keys[0], keys[1]);
    let again = ws.ok(&["list", "--db", "legacy.sqlite", "--json"]);
    assert!(!stderr(&again).contains("key-less"), "the migration is written once");
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again[0]["key"], keys[0].as_str(), "keys persist");
    assert_eq!(ws.json(&["retrieve", &keys[0], "--db", "legacy.sqlite"])["embedding_text"], "first");

    let older = ws.root().join("older.sqlite");
    {
        let conn = rusqlite::Connection::open(&older).unwrap();
        conn.execute_batch("CREATE TABLE vector_store (embedding_text TEXT UNIQUE, value TEXT, embedding BLOB)")
            .unwrap();
        conn.execute("INSERT INTO vector_store VALUES ('old row', 'v', ?1)", [&vector]).unwrap();
    }
    let migrated = ws.json(&["set-database", "older.sqlite"]);
    assert_eq!(migrated["migrated"], 1, "{migrated}");
    let row = &ws.json(&["list"])[0];
    assert!(is_uuid(row["key"].as_str().unwrap()), "{row}");
    // A store into the migrated table is searchable next to the old row.
    ws.ok(&["store", "a brand new row", "new"]);
    assert_eq!(ws.json(&["list"]).as_array().unwrap().len(), 2);
}

#[test]
fn set_database_is_remembered_per_workspace() {
    let ws = Workspace::new();
    let default_key =
        ws.json(&["store", "stored in the default database", "default"])["key"].as_str().unwrap().to_string();

    // Relative to the current directory; created if missing; remembered in .raggrep/.
    ws.fails(&["set-database", "vectors/chosen.sqlite"], "does not exist");
    fs::create_dir(ws.root().join("vectors")).unwrap();
    let answer = ws.json(&["set-database", "vectors/chosen.sqlite"]);
    let chosen = ws.root().join("vectors/chosen.sqlite");
    assert_eq!(answer["database"], chosen.display().to_string());
    assert_eq!(answer["rows"], 0);
    // The seed's spelling works too.
    let human = stdout(&ws.ok(&["set_database", "vectors/chosen.sqlite"]));
    assert!(human.contains("chosen.sqlite") && human.contains("0 rows"), "{human}");
    let remembered = fs::read_to_string(ws.root().join(".raggrep/vectordb.path")).unwrap();
    assert_eq!(remembered.trim(), chosen.display().to_string());

    // Later commands use it; the default database is untouched.
    let chosen_key =
        ws.json(&["store", "stored in the chosen database", "chosen"])["key"].as_str().unwrap().to_string();
    assert_eq!(ws.json(&["list"])[0]["key"], chosen_key.as_str());
    assert_eq!(ws.json(&["retrieve", &default_key])["found"], false);

    // --db is for one command only.
    let default_db = ws.default_db().display().to_string();
    assert_eq!(ws.json(&["retrieve", &default_key, "--db", &default_db])["value"], "default");
    assert_eq!(ws.json(&["list"])[0]["key"], chosen_key.as_str(), "--db did not change the choice");

    // A failed switch keeps the choice.
    ws.fails(&["set-database", "missing-dir/x.sqlite"], "does not exist");
    assert_eq!(ws.json(&["list"])[0]["key"], chosen_key.as_str());

    // --root from another directory finds the same workspace and choice.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_raggrep"))
        .args(["db", "retrieve", &chosen_key, "--root", ws.root().to_str().unwrap()])
        .current_dir(elsewhere.path())
        .env_remove("RAGGREP_INDEX_DIR")
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "chosen\n", "{}", stderr(&out));

    // --index-dir keeps the default database (and the choice) outside the tree.
    let index_dir = tempfile::tempdir().unwrap();
    let dir_arg = index_dir.path().to_str().unwrap();
    let key = ws.json(&["store", "kept outside the tree", "outside", "--index-dir", dir_arg])["key"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(index_dir.path().join("vectordb.sqlite").is_file());
    assert_eq!(ws.json(&["retrieve", &key, "--index-dir", dir_arg])["value"], "outside");
    assert_eq!(ws.json(&["retrieve", &key])["found"], false);
}

#[test]
fn cli_help_names_every_action() {
    let ws = Workspace::new();
    let help = stdout(&ws.ok(&["--help"]));
    for action in ["store", "retrieve", "delete", "list", "search", "import-file", "set-database"] {
        assert!(help.contains(action), "{action} missing from:\n{help}");
    }
}
