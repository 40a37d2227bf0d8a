// Server results → what the editor shows. Pure functions, no `vscode` import, so they are
// unit-tested with node's test runner (test/unit/results.test.ts).
//
// Shapes are the server's (docs/lsp.md, server/src/lsp/to_proto.rs): a hit is the
// `raggrep query --json` hit object (1-based inclusive lines) plus `uri`, `range` (0-based LSP
// range over whole lines, ending at column 0 of the line after the hit) and `root`. With the
// `team` setting on, `raggrep.search` also answers a `team` section: hits of other repositories
// from the team index, each with its `repo` and without `uri`/`range` (not on this machine).

import * as path from 'node:path';
import { pathToFileURL } from 'node:url';

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface Hit {
  /** `path:start-end`. */
  location?: string;
  path: string;
  start_line: number;
  end_line: number;
  score: number;
  symbol?: string | null;
  kind?: string;
  language?: string;
  snippet?: string;
  uri?: string;
  range?: Range;
  root?: string;
  /** `remote@branch` of a team index hit (another repository: no `uri`, no `range`). */
  repo?: string | null;
  /** A team index hit's whole chunk (`snippet` is its first lines). */
  text?: string | null;
}

/** The team index's answer beside a local search (the `team` setting); absent when it is off. */
export interface TeamSection {
  /** The database, password hidden: `postgres://dev:***@db.internal/code`. */
  source?: string;
  took_ms?: number;
  results?: Hit[] | null;
  /** Why the team index could not answer (down, misconfigured); `results` is then empty. */
  error?: string | null;
}

/** `raggrep.search` result; `raggrep.findSimilar` has only `results`. */
export interface SearchResult {
  query?: string;
  took_ms?: number;
  partial?: boolean;
  /** Why the ranking is worse than usual, root by root: part of an index damaged, or an index
   * of another model searched by its words only until it is rebuilt. */
  degraded?: string | null;
  /** Calibrated probability that the first 5 results hold the answer (default search only). */
  confidence?: number;
  /** Probably nothing here is what was asked about: the results are only the closest code. */
  no_confident_match?: boolean;
  results?: Hit[];
  team?: TeamSection | null;
}

/** One root of `raggrep.status` (the fields of `raggrep status --json` plus the live state). */
export interface RootStatus {
  root?: string;
  files?: number;
  chunks?: number;
  pending?: number;
  skipped?: number;
  enabled?: boolean;
  indexing?: boolean;
  partial?: boolean;
  last_error?: string | null;
  memory_level?: string;
  reason?: string | null;
  model?: string;
}

/** `raggrep.status`: the first root's fields plus `roots`. */
export interface Status extends RootStatus {
  roots?: RootStatus[];
}

/** A result as a QuickPick row, plus where it leads. */
export interface HitItem {
  label: string;
  description: string;
  detail: string;
  uri: string;
  range: Range;
  /** 1-based first line, for messages and tests. */
  line: number;
  hit: Hit;
}

/** The first non-blank line of a snippet, trimmed and shortened. */
export function firstLine(snippet: string | null | undefined, max = 120): string {
  for (const line of (snippet ?? '').split('\n')) {
    const trimmed = line.trim();
    if (trimmed !== '') {
      return trimmed.length > max ? `${trimmed.slice(0, max - 1)}…` : trimmed;
    }
  }
  return '';
}

const KIND_ICONS: Record<string, string> = {
  function: 'symbol-function',
  method: 'symbol-method',
  class: 'symbol-class',
  impl: 'symbol-class',
  struct: 'symbol-struct',
  enum: 'symbol-enum',
  interface: 'symbol-interface',
  trait: 'symbol-interface',
  module: 'symbol-module',
  type: 'symbol-type-parameter',
  macro: 'symbol-function',
  section: 'symbol-key',
  code: 'symbol-file',
  text: 'symbol-file',
};

/** Codicon name for a chunk kind. */
export function kindIcon(kind: string | undefined): string {
  return (kind && KIND_ICONS[kind]) || 'symbol-file';
}

/** Scores are in [0, 1] after fusion; two decimals are enough to compare rows. */
export function formatScore(score: number | undefined): string {
  return typeof score === 'number' && Number.isFinite(score) ? score.toFixed(2) : '?';
}

/** The file URI of a hit: the server's `uri`, else `root` + `path`. */
export function hitUri(hit: Hit): string {
  if (typeof hit.uri === 'string' && hit.uri !== '') {
    return hit.uri;
  }
  const file = hit.root ? path.join(hit.root, hit.path) : hit.path;
  return pathToFileURL(file).toString();
}

/** The hit's LSP range: the server's `range`, else one computed from its 1-based lines. */
export function hitRange(hit: Hit): Range {
  if (hit.range && hit.range.start && hit.range.end) {
    return hit.range;
  }
  return lineRange(hit.start_line, hit.end_line);
}

/** 1-based inclusive lines → the LSP range the server uses (whole lines). */
export function lineRange(startLine: number, endLine: number): Range {
  return {
    start: { line: Math.max(0, startLine - 1), character: 0 },
    end: { line: Math.max(startLine, endLine), character: 0 },
  };
}

export interface ItemOptions {
  /** Prefix paths with their root's folder name (multi-root workspaces). */
  multiRoot?: boolean;
}

/**
 * A hit as a QuickPick row:
 *   label        `$(symbol-function) validate_token` (or the chunk's first line if it has no symbol)
 *   description  `src/auth.py:19`  (`folder · src/auth.py:19` in a multi-root workspace)
 *   detail       `1.00 · function · def validate_token(store, token):`
 */
export function hitToItem(hit: Hit, options: ItemOptions = {}): HitItem {
  let where = `${hit.path}:${hit.start_line}`;
  if (options.multiRoot && hit.root) {
    where = `${path.basename(hit.root)} · ${where}`;
  }
  return {
    ...labelAndDetail(hit),
    description: where,
    uri: hitUri(hit),
    range: hitRange(hit),
    line: hit.start_line,
    hit,
  };
}

/** A row's label (icon + symbol or first line) and detail (score · kind · first line). */
function labelAndDetail(hit: Hit): { label: string; detail: string } {
  const first = firstLine(hit.snippet);
  const symbol = typeof hit.symbol === 'string' && hit.symbol !== '' ? hit.symbol : undefined;
  const name = symbol ?? (first || hit.path);
  const detailParts = [formatScore(hit.score)];
  if (hit.kind) {
    detailParts.push(hit.kind);
  }
  if (symbol && first) {
    detailParts.push(first);
  }
  return { label: `$(${kindIcon(hit.kind)}) ${name}`, detail: detailParts.join(' · ') };
}

/**
 * Local hits as rows, in the server's order. A hit of another repository (a `repo` and no `uri`)
 * is left out: `root` + `path` would name a file of this machine that it is not.
 */
export function resultsToItems(results: Hit[] | null | undefined, options: ItemOptions = {}): HitItem[] {
  return (results ?? []).filter((hit) => isHit(hit) && !isRemote(hit)).map((hit) => hitToItem(hit, options));
}

function isHit(value: unknown): value is Hit {
  const hit = value as Hit;
  return typeof hit === 'object' && hit !== null && typeof hit.path === 'string' && typeof hit.start_line === 'number';
}

function isRemote(hit: Hit): boolean {
  return typeof hit.repo === 'string' && hit.repo !== '' && !(typeof hit.uri === 'string' && hit.uri !== '');
}

/** The URI scheme of the read-only documents that show team index hits. */
export const TEAM_SCHEME = 'raggrep-team';

/** What a team hit opens: a read-only virtual document (`raggrep-team:` URI). */
export interface TeamDocument {
  /** The URI's path, `/<repo>/<path>`: the tab is named after the file, and its extension. */
  path: string;
  /** The URI's query, the hit's lines (`L12-30`): two hits of one file are two documents. */
  query: string;
  /** VS Code's language id for the hit's language, if VS Code has one (not for `text`). */
  languageId?: string;
  /** A header comment with repository, location and symbol, then the snippet. */
  content: string;
}

/**
 * A team index hit as a QuickPick row. It has no `uri` or `range` (the file is in another
 * repository, not on this machine): choosing it opens `document`, never a file.
 */
export interface TeamHitItem {
  label: string;
  description: string;
  detail: string;
  repo: string;
  /** 1-based first line in its repository, for messages and tests. */
  line: number;
  hit: Hit;
  document: TeamDocument;
}

/** The team section as rows, after the local ones. */
export type TeamRow =
  | { kind: 'separator'; label: string }
  | { kind: 'error'; label: string; detail: string }
  | { kind: 'hit'; item: TeamHitItem };

/** raggrep's language names (`wire` Language) → VS Code language ids. */
const LANGUAGE_IDS: Record<string, string> = {
  rust: 'rust',
  python: 'python',
  javascript: 'javascript',
  typescript: 'typescript',
  tsx: 'typescriptreact',
  go: 'go',
  java: 'java',
  c: 'c',
  cpp: 'cpp',
  markdown: 'markdown',
  ruby: 'ruby',
  php: 'php',
  csharp: 'csharp',
  kotlin: 'kotlin',
  swift: 'swift',
  scala: 'scala',
  elixir: 'elixir',
  lua: 'lua',
  bash: 'shellscript',
  zig: 'zig',
  haskell: 'haskell',
  yaml: 'yaml',
  toml: 'toml',
  json: 'jsonc',
  dart: 'dart',
  objc: 'objective-c',
  ocaml: 'ocaml',
  r: 'r',
  julia: 'julia',
};

/** VS Code's language id for a hit's `language`, or undefined (`text`, unknown). */
export function languageId(language: string | undefined): string | undefined {
  return language ? LANGUAGE_IDS[language] : undefined;
}

/** A line comment in a language (plain text when it has none). */
export function commentLine(language: string | undefined, text: string): string {
  switch (language) {
    case 'python':
    case 'ruby':
    case 'elixir':
    case 'bash':
    case 'yaml':
    case 'toml':
    case 'r':
    case 'julia':
      return `# ${text}`;
    case 'ocaml':
      return `(* ${text} *)`;
    case 'lua':
    case 'haskell':
      return `-- ${text}`;
    case 'markdown':
      return `<!-- ${text} -->`;
    case 'rust':
    case 'javascript':
    case 'typescript':
    case 'tsx':
    case 'go':
    case 'java':
    case 'c':
    case 'cpp':
    case 'php':
    case 'csharp':
    case 'kotlin':
    case 'swift':
    case 'scala':
    case 'zig':
    case 'json':
    case 'dart':
    case 'objc':
      return `// ${text}`;
    default:
      return text;
  }
}

/**
 * The separator above the team rows: `team index`. VS Code draws a separator's label at the end
 * of the row below it, so a long label (the database URL) left the first team row unreadable;
 * the URL is in the error row's detail and in the output channel's lines instead.
 */
export function teamSeparatorLabel(_team: TeamSection): string {
  return 'team index';
}

/**
 * The read-only document of a team hit:
 *   `// github.com/acme/billing@main · src/auth/token.rs:12-30 · TokenValidator::validate (team index, read-only)`
 * then the chunk's text (`text`; from servers that send only `snippet`, the snippet). When that
 * is shorter than the hit, the header says how much is shown.
 */
export function teamDocument(hit: Hit): TeamDocument {
  const repo = repoName(hit);
  const end = typeof hit.end_line === 'number' && hit.end_line >= hit.start_line ? hit.end_line : hit.start_line;
  const whole = typeof hit.text === 'string' && hit.text !== '' ? hit.text : hit.snippet;
  const snippet = (whole ?? '').replace(/\n+$/, '');
  const shown = snippet === '' ? 0 : snippet.split('\n').length;
  const total = end - hit.start_line + 1;
  const parts = [repo, `${hit.path}:${hit.start_line}-${end}`];
  const symbol = typeof hit.symbol === 'string' && hit.symbol !== '' ? hit.symbol : undefined;
  if (symbol) parts.push(symbol);
  let note = 'team index, read-only';
  if (shown < total) note += `; first ${shown} of ${total} lines`;
  const header = commentLine(hit.language, `${parts.join(' · ')} (${note})`);
  const segments = repo.split('/').filter((s) => s !== '' && s !== '.' && s !== '..');
  const file = hit.path.split('/').filter((s) => s !== '' && s !== '.' && s !== '..');
  return {
    path: '/' + [...segments, ...file].join('/'),
    query: `L${hit.start_line}-${end}`,
    languageId: languageId(hit.language),
    content: snippet === '' ? `${header}\n` : `${header}\n${snippet}\n`,
  };
}

function repoName(hit: Hit): string {
  return typeof hit.repo === 'string' && hit.repo !== '' ? hit.repo : 'unknown repository';
}

/**
 * A team hit as a QuickPick row:
 *   label        `$(symbol-method) TokenValidator::validate`
 *   description  `github.com/acme/billing@main · src/auth/token.rs:12`
 *   detail       `0.74 · method · pub fn validate(&self, token: &str) -> Result<Claims> {`
 */
export function teamHitToItem(hit: Hit): TeamHitItem {
  const repo = repoName(hit);
  const { label, detail } = labelAndDetail(hit);
  return {
    label,
    description: `${repo} · ${hit.path}:${hit.start_line}`,
    detail,
    repo,
    line: hit.start_line,
    hit,
    document: teamDocument(hit),
  };
}

/**
 * The rows of a search answer's `team` section: none when it is absent or has neither hits nor
 * an error; else a separator, the error (a row that leads nowhere) and one row per hit.
 */
export function teamRows(team: TeamSection | null | undefined): TeamRow[] {
  if (typeof team !== 'object' || team === null) return [];
  const hits = (Array.isArray(team.results) ? team.results : []).filter(isHit);
  const error = typeof team.error === 'string' && team.error.trim() !== '' ? team.error.trim() : undefined;
  if (hits.length === 0 && !error) return [];
  const rows: TeamRow[] = [{ kind: 'separator', label: teamSeparatorLabel(team) }];
  if (error) {
    rows.push({ kind: 'error', label: '$(warning) The team index did not answer', detail: error });
  }
  for (const hit of hits) {
    rows.push({ kind: 'hit', item: teamHitToItem(hit) });
  }
  return rows;
}

/** Why a search found nothing, when the server knows more than "nothing matches": the
 * server's `degraded` (say, an index of another model searched by its words only), or an index still
 * being built. */
export function noResultsDetail(result: SearchResult | undefined): string | undefined {
  if (typeof result?.degraded === 'string' && result.degraded !== '') {
    return result.degraded;
  }
  return result?.partial ? 'The index is still being built.' : undefined;
}

/** QuickPick title for a search answer. */
export function searchTitle(result: SearchResult | undefined): string {
  let title = 'raggrep: Semantic Search';
  if (result && Array.isArray(result.results)) {
    const n = result.results.length;
    title += ` — ${n} result${n === 1 ? '' : 's'}`;
    if (typeof result.took_ms === 'number') {
      title += ` in ${Math.round(result.took_ms)} ms`;
    }
    const team = result.team;
    if (team && typeof team === 'object' && Array.isArray(team.results) && team.results.length > 0) {
      title += `, ${team.results.length} from the team index`;
    }
  }
  if (result?.partial) {
    title += ' (index still building)';
  }
  if (typeof result?.degraded === 'string' && result.degraded !== '') {
    title += ' — degraded: ' + result.degraded;
  }
  if (result?.no_confident_match === true && Array.isArray(result.results) && result.results.length > 0) {
    title += ' — no confident match, closest code';
  }
  return title;
}

/** Title for Find Similar: `Similar to src/auth.py:19-25`. Lines are shown 1-based inclusive. */
export function similarTitle(relativePath: string, range: Range): string {
  const first = range.start.line + 1;
  let last = range.end.line;
  if (range.end.character !== 0 || range.end.line === range.start.line) {
    last += 1;
  }
  return `Similar to ${relativePath}:${first}-${Math.max(first, last)}`;
}

/**
 * The range Find Similar sends for a selection: the selection itself, or, when it is empty, the
 * cursor line (the server widens a line to the function/method/class under it).
 */
export function similarRange(selection: Range): Range {
  const empty = selection.start.line === selection.end.line && selection.start.character === selection.end.character;
  if (empty) {
    return { start: { line: selection.start.line, character: 0 }, end: { line: selection.start.line + 1, character: 0 } };
  }
  return selection;
}

/** Server setting keys (docs/lsp.md), in the order of the settings table. */
export const SERVER_SETTING_KEYS = [
  'enabled',
  'include',
  'exclude',
  'maxFileSize',
  'memoryBudgetMb',
  'modelDir',
  'defaultK',
  'logLevel',
  'team',
  'indexThreads',
  'indexPriority',
] as const;

/**
 * `raggrep.*` configuration → the server's settings object (initializationOptions and
 * didChangeConfiguration). Client-only keys (`server.*`, `findSimilar.*`, `trace.*`) are not sent;
 * an empty `modelDir` means the server's default and is left out; values of the wrong type are
 * left out (the server would reject the whole object). `team` is always sent when valid, `false`
 * too: the server keeps keys a change leaves out, so turning it off must say so. An empty URL
 * is `false`.
 */
export function serverSettings(get: (key: string) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const bool = (k: string) => {
    const v = get(k);
    if (typeof v === 'boolean') out[k] = v;
  };
  const globs = (k: string) => {
    const v = get(k);
    if (Array.isArray(v)) out[k] = v.filter((g) => typeof g === 'string' && g.trim() !== '');
  };
  const positive = (k: string) => {
    const v = get(k);
    if (typeof v === 'number' && Number.isFinite(v) && v > 0) out[k] = Math.floor(v);
  };
  bool('enabled');
  globs('include');
  globs('exclude');
  positive('maxFileSize');
  positive('memoryBudgetMb');
  const modelDir = get('modelDir');
  if (typeof modelDir === 'string' && modelDir.trim() !== '') out.modelDir = modelDir.trim();
  positive('defaultK');
  const level = get('logLevel');
  if (level === 'error' || level === 'warn' || level === 'info' || level === 'debug') out.logLevel = level;
  const team = get('team');
  if (typeof team === 'boolean') out.team = team;
  else if (typeof team === 'string') out.team = team.trim() === '' ? false : team.trim();
  // 0 means one thread per CPU, the server's default; it is sent like any other count.
  const threads = get('indexThreads');
  if (typeof threads === 'number' && Number.isFinite(threads) && threads >= 0) out.indexThreads = Math.floor(threads);
  const priority = get('indexPriority');
  if (priority === 'low' || priority === 'normal') out.indexPriority = priority;
  return out;
}

/** The roots of a `raggrep.status` answer (older shapes: the top-level object is the root). */
export function statusRoots(status: Status | null | undefined): RootStatus[] {
  if (!status) return [];
  if (Array.isArray(status.roots) && status.roots.length > 0) return status.roots;
  return status.root !== undefined ? [status] : [];
}

/** One line per root: `polyglot: 8 files, 18 chunks, indexing`. */
export function formatStatus(status: Status | null | undefined, home?: string): string[] {
  const roots = statusRoots(status);
  if (roots.length === 0) {
    return ['no workspace folder yet (the server is starting)'];
  }
  return roots.map((s) => {
    const parts: string[] = [];
    if (typeof s.chunks === 'number') {
      parts.push(`${s.files ?? 0} files, ${s.chunks} chunks`);
      if ((s.pending ?? 0) > 0) parts.push(`${s.pending} pending`);
    } else {
      parts.push('no index yet');
    }
    if (s.enabled === false) parts.push('off');
    if (s.indexing) parts.push('indexing');
    if (s.partial) parts.push('partial');
    if (s.reason) parts.push(s.reason);
    if (s.last_error) parts.push(`error: ${s.last_error}`);
    let root = s.root ?? '?';
    if (home && (root === home || root.startsWith(home + '/'))) root = '~' + root.slice(home.length);
    return `${root}: ${parts.join(', ')}`;
  });
}

/**
 * What the status-bar item shows. `paused`: indexing is paused (`raggrep.pause`); the bar says
 * so in place of the progress or the chunk count.
 */
export type BarState =
  | { kind: 'starting' }
  | { kind: 'error'; message: string }
  | { kind: 'noFolder' }
  | { kind: 'progress'; percentage?: number; message?: string; title?: string; paused?: boolean }
  | { kind: 'status'; status: Status; paused?: boolean };

export interface BarView {
  text: string;
  tooltip: string;
}

/** The tooltip's last line while indexing is paused. */
const PAUSED_HINT = 'Indexing is paused: file changes are queued, searches keep working. "raggrep: Resume Indexing" goes on.';

/** Status-bar text and tooltip for a state: progress, chunk count, paused, or off. */
export function statusBar(state: BarState): BarView {
  if ((state.kind === 'progress' || state.kind === 'status') && state.paused) return pausedBar(state);
  switch (state.kind) {
    case 'starting':
      return { text: '$(loading~spin) raggrep', tooltip: 'raggrep: starting the language server' };
    case 'error':
      return { text: '$(error) raggrep', tooltip: `raggrep: ${state.message}` };
    case 'noFolder':
      return { text: '$(search) raggrep', tooltip: 'raggrep: open a folder to index it' };
    case 'progress': {
      const pct = typeof state.percentage === 'number' ? ` ${Math.round(state.percentage)}%` : '';
      const detail = [state.title, state.message].filter(Boolean).join(': ');
      return { text: `$(sync~spin) raggrep: indexing${pct}`, tooltip: detail || 'raggrep: indexing' };
    }
    case 'status': {
      const roots = statusRoots(state.status);
      const tooltip = formatStatus(state.status).join('\n') + '\nClick for details.';
      if (roots.length === 0) {
        return { text: '$(loading~spin) raggrep', tooltip };
      }
      if (roots.every((r) => r.enabled === false)) {
        return { text: '$(circle-slash) raggrep: off', tooltip };
      }
      const on = roots.filter((r) => r.enabled !== false);
      const chunks = on.reduce((n, r) => n + (r.chunks ?? 0), 0);
      const error = on.find((r) => r.last_error);
      if (error) {
        return { text: `$(warning) raggrep: ${chunks} chunks`, tooltip };
      }
      if (on.some((r) => r.indexing) || (on.every((r) => r.chunks === undefined || r.chunks === null))) {
        const n = on.some((r) => typeof r.chunks === 'number') ? ` (${chunks} chunks)` : '';
        return { text: `$(sync~spin) raggrep: indexing${n}`, tooltip };
      }
      const limited = on.some((r) => r.partial) ? ' (partial)' : '';
      return { text: `$(database) raggrep: ${chunks} chunks${limited}`, tooltip };
    }
  }
}

/**
 * The bar while indexing is paused: `$(debug-pause) raggrep: paused`, with the chunk count when
 * the status has one, or how far the update under way got (it stops after its current batch).
 */
function pausedBar(state: Extract<BarState, { kind: 'progress' | 'status' }>): BarView {
  if (state.kind === 'progress') {
    const pct = typeof state.percentage === 'number' ? ` at ${Math.round(state.percentage)}%` : '';
    const detail = [state.title, state.message].filter(Boolean).join(': ');
    return {
      text: `$(debug-pause) raggrep: paused${pct}`,
      tooltip: `raggrep: indexing paused${pct}${detail ? ` (${detail})` : ''}\n${PAUSED_HINT}`,
    };
  }
  const on = statusRoots(state.status).filter((r) => r.enabled !== false);
  const counted = on.filter((r) => typeof r.chunks === 'number');
  const chunks = counted.reduce((n, r) => n + (r.chunks ?? 0), 0);
  const lines = statusRoots(state.status).length > 0 ? formatStatus(state.status) : [];
  return {
    text: `$(debug-pause) raggrep: paused${counted.length > 0 ? ` (${chunks} chunks)` : ''}`,
    tooltip: ['raggrep: indexing paused', ...lines, PAUSED_HINT, 'Click for details.'].join('\n'),
  };
}

/**
 * The message after `raggrep.pause` / `raggrep.resume`, from the server's answer `{paused}`
 * (the answer wins over what was asked: it is the server's state).
 */
export function pauseMessage(answer: { paused?: unknown } | null | undefined, asked: boolean): { paused: boolean; message: string } {
  const paused = typeof answer?.paused === 'boolean' ? answer.paused : asked;
  return {
    paused,
    message: paused
      ? 'raggrep: indexing paused (file changes are queued; searches keep working).'
      : 'raggrep: indexing resumed.',
  };
}

/** `$/progress` value (begin/report/end) folded into the bar's progress state. */
export function foldProgress(
  previous: { title?: string; message?: string; percentage?: number } | undefined,
  value: { kind?: string; title?: string; message?: string; percentage?: number },
): { title?: string; message?: string; percentage?: number } | undefined {
  if (value.kind === 'end') return undefined;
  const next = { ...(previous ?? {}) };
  if (value.title !== undefined) next.title = value.title;
  if (value.message !== undefined) next.message = value.message;
  if (value.percentage !== undefined) next.percentage = value.percentage;
  return next;
}

/** A commit of a `raggrep.history` answer (`raggrep log --json`'s result). */
export interface HistoryCommit {
  commit: string;
  date?: string;
  author?: string;
  subject?: string;
  files?: string[];
  more_files?: number;
  symbols?: string[];
  merge?: boolean;
  score?: number;
}

/** A row of the history QuickPick: the subject, then date, short id and author, then the paths. */
export interface HistoryItem {
  label: string;
  description: string;
  detail: string;
  commit: string;
}

/** The rows of a `raggrep.history` answer, in its order; anything that is not a commit is left out. */
export function historyItems(result: unknown): HistoryItem[] {
  const commits = (result as { results?: unknown } | null)?.results;
  if (!Array.isArray(commits)) return [];
  const items: HistoryItem[] = [];
  for (const c of commits as HistoryCommit[]) {
    if (typeof c !== 'object' || c === null || typeof c.commit !== 'string') continue;
    const files = Array.isArray(c.files) ? c.files.filter((f) => typeof f === 'string') : [];
    const more = typeof c.more_files === 'number' && c.more_files > 0 ? ` and ${c.more_files} more` : '';
    const symbols = Array.isArray(c.symbols) && c.symbols.length > 0 ? ` · changed: ${c.symbols.join(', ')}` : '';
    items.push({
      label: `$(git-commit) ${c.subject ?? ''}`,
      description: [c.date, c.commit.slice(0, 12), c.author, c.merge ? 'merge' : undefined].filter(Boolean).join(' · '),
      detail: `${files.join(', ')}${more}${symbols}`,
      commit: c.commit,
    });
  }
  return items;
}
