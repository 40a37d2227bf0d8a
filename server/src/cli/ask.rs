//! `raggrep ask "question"`: the router's exact answers, or retrieval → prompt → an
//! OpenAI-compatible LLM, streamed; `--prompt` stops at the prompt.

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::LocationArgs;
use super::progress::Terminal;
use crate::ask::{self, LlmSettings, Route, Source, llm};
use crate::audit::{self, Door};
use crate::engine::{IndexLocation, Local, ModelChoice, Need, Retrieval, RootIndex};
use crate::wire;

/// The environment variable holding the API key unless `api_key_env` names another.
const DEFAULT_KEY_ENV: &str = "RAGGREP_LLM_API_KEY";

#[derive(clap::Args)]
pub struct AskArgs {
    /// The question, in words ("where do we validate API tokens?", "list the functions in
    /// src/db.rs", "where is `parse_config` defined").
    question: String,
    #[command(flatten)]
    location: LocationArgs,
    /// Print the prompt (question, snippets, instructions) and exit: no LLM needed.
    #[arg(long)]
    prompt: bool,
    /// One JSON object: route, answer (or prompt), sources, timings.
    #[arg(long)]
    json: bool,
    /// OpenAI-compatible endpoint (default: [llm] url in the config, else http://127.0.0.1:8080/v1).
    #[arg(long, env = "RAGGREP_LLM_URL", value_name = "URL")]
    llm_url: Option<String>,
    /// Model name to ask for (default: [llm] model in the config, else the server's first).
    #[arg(long, env = "RAGGREP_LLM_MODEL", value_name = "NAME")]
    llm_model: Option<String>,
    /// Seconds to wait for the LLM server: to connect, and between two pieces of the answer.
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    llm_timeout: u64,
    /// Most estimated tokens of code the prompt holds.
    #[arg(long, default_value_t = 3000, value_name = "TOKENS")]
    budget: usize,
    /// Most tokens the answer may have.
    #[arg(long, default_value_t = 512, value_name = "TOKENS")]
    max_tokens: u32,
}

pub fn run(args: AskArgs, model: Option<&str>, ort: Option<&Path>) -> Result<()> {
    let started = Instant::now();
    let question = args.question.trim().to_string();
    anyhow::ensure!(
        !question.is_empty(),
        "the question is empty: ask something, e.g. raggrep ask \"where is main defined?\""
    );
    anyhow::ensure!(args.budget >= 100, "--budget {} is too small to hold any code: give 100 or more", args.budget);
    anyhow::ensure!(args.max_tokens > 0, "--max-tokens must be at least 1");
    anyhow::ensure!(args.llm_timeout > 0, "--llm-timeout must be at least 1 second");
    let location = args.location.resolve()?.location;
    // Settle the LLM configuration first: a bad config fails before any work.
    let llm_config = if args.prompt { None } else { Some(llm_config(&args, &location)?) };

    let route = ask::route(&question);
    // The exact routes need no model: it loads only for retrieval (or to build a missing index).
    let mut engine = Local::new(location.clone(), ModelChoice::new(model, ort), Door::Cli);
    let snapshot = Arc::new(engine.open_for(Need { vectors: false, answer_first: false }, &mut Terminal::new())?);
    let roots = [RootIndex::whole(location.root.clone(), Arc::clone(&snapshot))];
    let mut fallback = None;
    if route != Route::Retrieval {
        match ask::answer_exactly(&route, &roots) {
            Ok(exact) => {
                note_route(&route, None);
                let answer = wire::AskAnswer {
                    question,
                    route: route.name().to_string(),
                    target: route.target().map(str::to_string),
                    fallback: None,
                    answer: Some(exact.text.clone()),
                    prompt: None,
                    prompt_tokens: None,
                    sources: exact.sources.iter().map(|s| ask_source(s, None)).collect(),
                    model: None,
                    finish_reason: None,
                    took_ms: started.elapsed().as_secs_f64() * 1000.0,
                    first_token_ms: None,
                    confidence: None,
                };
                return print_whole(&location, &answer, args.json, &exact.text);
            }
            Err(why) => fallback = Some(why),
        }
    }
    note_route(&route, fallback.as_deref());

    // Retrieval: the index's best chunks, read from disk as they are now, under the budget.
    let Retrieval { prompt, confidence, degraded } = engine.prompt_for(&snapshot, &question, args.budget)?;
    super::warn_degraded(degraded.as_deref());
    let confidence = confidence.map(wire::Confidence::from);
    if confidence.is_some_and(|c| c.no_confident_match) {
        let _ = writeln!(
            io::stderr(),
            "no confident match: the code base probably holds nothing about this; the snippets are only the closest code"
        );
    }
    let retrieval_ms = started.elapsed().as_secs_f64() * 1000.0;
    let mut answer = wire::AskAnswer {
        question,
        route: Route::Retrieval.name().to_string(),
        target: None,
        fallback,
        answer: None,
        prompt: None,
        prompt_tokens: Some(prompt.tokens),
        sources: Vec::new(),
        model: None,
        finish_reason: None,
        took_ms: retrieval_ms,
        first_token_ms: None,
        confidence,
    };

    let Some(config) = llm_config else {
        answer.sources = prompt.sources.iter().map(|s| ask_source(s, None)).collect();
        answer.prompt = Some(prompt.text.clone());
        return print_whole(&location, &answer, args.json, &prompt.text);
    };

    let json = args.json;
    let mut stdout = io::stdout();
    let mut write_error = None;
    let mut on_text = |text: &str| {
        if json || write_error.is_some() {
            return;
        }
        if let Err(err) = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
            write_error = Some(err);
        }
    };
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the HTTP client")?;
    let completion = runtime.block_on(llm::complete(&config, &prompt.text, &mut on_text))?;
    if let Some(err) = write_error {
        return Err(err.into());
    }
    answer.took_ms = started.elapsed().as_secs_f64() * 1000.0;
    answer.first_token_ms = completion.first_token_ms.map(|ms| ms + retrieval_ms);
    answer.sources = prompt.sources.iter().map(|s| ask_source(s, Some(cites(&completion.text, s)))).collect();
    answer.model = Some(completion.model.clone());
    answer.finish_reason = completion.finish_reason.clone();
    answer.answer = Some(completion.text.clone());
    record(&location, &answer);
    let mut out = io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(&answer)?)?;
        return Ok(());
    }
    if !completion.text.ends_with('\n') {
        writeln!(out)?;
    }
    if completion.finish_reason.as_deref() == Some("length") {
        writeln!(out, "[answer cut at --max-tokens {}]", args.max_tokens)?;
    }
    writeln!(out, "\nSources ({} given to {}; * cited in the answer):", prompt.sources.len(), completion.model)?;
    for (source, listed) in prompt.sources.iter().zip(&answer.sources) {
        let mark = if listed.cited == Some(true) { '*' } else { ' ' };
        let symbol = source.symbol.as_deref().unwrap_or_default();
        writeln!(out, "{mark} {}  {symbol}", source.citation())?;
    }
    let _ = writeln!(
        io::stderr(),
        "answered in {:.1} s (retrieval {:.0} ms, first token after {:.1} s, {} tokens of prompt)",
        answer.took_ms / 1000.0,
        retrieval_ms,
        answer.first_token_ms.unwrap_or(answer.took_ms) / 1000.0,
        prompt.tokens
    );
    Ok(())
}

/// An answer that is complete before anything is printed (exact, or the prompt): audited, then
/// printed as JSON or as its text.
fn print_whole(location: &IndexLocation, answer: &wire::AskAnswer, json: bool, text: &str) -> Result<()> {
    record(location, answer);
    let mut out = io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(answer)?)?;
    } else {
        write!(out, "{text}")?;
    }
    Ok(())
}

/// Flags and environment, then the workspace's `.raggrep/config.toml`, then the user's.
fn llm_config(args: &AskArgs, location: &IndexLocation) -> Result<llm::LlmConfig> {
    let workspace = LlmSettings::load(&location.dir.join("config.toml")).map_err(anyhow::Error::msg)?;
    let user = match LlmSettings::user_file() {
        Some(path) => LlmSettings::load(&path).map_err(anyhow::Error::msg)?,
        None => LlmSettings::default(),
    };
    let flags = LlmSettings { url: args.llm_url.clone(), model: args.llm_model.clone(), api_key_env: None };
    let settings = flags.or(workspace).or(user);
    let key_env = settings.api_key_env.unwrap_or_else(|| DEFAULT_KEY_ENV.to_string());
    let api_key = std::env::var(&key_env).ok().filter(|k| !k.trim().is_empty());
    let config = llm::LlmConfig {
        url: settings.url.unwrap_or_else(|| llm::DEFAULT_URL.to_string()),
        model: settings.model.filter(|m| !m.trim().is_empty()),
        api_key,
        api_key_env: key_env,
        timeout: Duration::from_secs(args.llm_timeout),
        max_tokens: args.max_tokens,
    };
    llm::Endpoint::parse(&config.url)?;
    Ok(config)
}

/// The route on stderr, so the answer on stdout stays clean to pipe.
fn note_route(route: &Route, fallback: Option<&str>) {
    let line = match (route, fallback) {
        (Route::Retrieval, _) => "route: retrieval".to_string(),
        (route, None) => format!(
            "route: {} of {} (exact, from the syntax tree and the index)",
            route.name(),
            route.target().unwrap_or_default()
        ),
        (route, Some(why)) => format!("route: {} → retrieval ({why})", route.name()),
    };
    let _ = writeln!(io::stderr(), "{line}");
}

/// Whether an answer refers to a source: its `path:start-end`, or its path with a line in it.
fn cites(answer: &str, source: &Source) -> bool {
    answer.contains(&source.citation())
        || answer.match_indices(source.path.as_str()).any(|(at, _)| {
            let rest = &answer[at + source.path.len()..];
            let line: String =
                rest.strip_prefix(':').unwrap_or_default().chars().take_while(char::is_ascii_digit).collect();
            line.parse::<u32>().is_ok_and(|line| (source.start_line..=source.end_line).contains(&line))
        })
}

fn ask_source(source: &Source, cited: Option<bool>) -> wire::AskSource {
    wire::AskSource { location: source.citation(), symbol: source.symbol.clone(), kind: source.kind, cited }
}

/// The audit log gets the route and the counts, never the question or the answer.
fn record(location: &IndexLocation, answer: &wire::AskAnswer) {
    let detail = serde_json::json!({
        "route": answer.route,
        "fallback": answer.fallback.is_some(),
        "sources": answer.sources.len(),
        "prompt_tokens": answer.prompt_tokens,
        "llm": answer.model.is_some(),
    });
    audit::record(&location.dir, Door::Cli, "ask", answer.took_ms, detail);
}
