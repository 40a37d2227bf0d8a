// Unit tests of the result mapping (src/results.ts): node --test, no VS Code needed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  commentLine,
  firstLine,
  foldProgress,
  formatScore,
  formatStatus,
  Hit,
  historyItems,
  hitToItem,
  hitUri,
  kindIcon,
  languageId,
  lineRange,
  noResultsDetail,
  pauseMessage,
  resultsToItems,
  SearchResult,
  searchTitle,
  serverSettings,
  similarRange,
  similarTitle,
  statusBar,
  statusRoots,
  TEAM_SCHEME,
  teamDocument,
  teamRows,
  teamSeparatorLabel,
} from '../../src/results';

// As `raggrep.search` returns it over LSP (server/src/lsp/to_proto.rs hit_json).
const validateToken: Hit = {
  path: 'src/auth.py',
  start_line: 19,
  end_line: 25,
  score: 1.0,
  symbol: 'validate_token',
  kind: 'function',
  language: 'python',
  snippet: 'def validate_token(store, token):\n    """Check that an API token exists and has not expired."""\n',
  uri: 'file:///work/ws/src/auth.py',
  range: { start: { line: 18, character: 0 }, end: { line: 25, character: 0 } },
  root: '/work/ws',
};
const anonymous: Hit = {
  path: 'src/auth.py',
  start_line: 1,
  end_line: 4,
  score: 0.22413006,
  symbol: null,
  kind: 'code',
  language: 'python',
  snippet: '\n  """Authentication helpers for the HTTP API."""\n\nimport hmac',
  uri: 'file:///work/ws/src/auth.py',
  range: { start: { line: 0, character: 0 }, end: { line: 4, character: 0 } },
  root: '/work/ws',
};

test('a hit with a symbol: icon + symbol, path:line, score · kind · first line', () => {
  const item = hitToItem(validateToken);
  assert.equal(item.label, '$(symbol-function) validate_token');
  assert.equal(item.description, 'src/auth.py:19');
  assert.equal(item.detail, '1.00 · function · def validate_token(store, token):');
  assert.equal(item.uri, 'file:///work/ws/src/auth.py');
  assert.deepEqual(item.range, { start: { line: 18, character: 0 }, end: { line: 25, character: 0 } });
  assert.equal(item.line, 19);
  assert.equal(item.hit, validateToken);
});

test('a hit without a symbol is named by its first non-blank line', () => {
  const item = hitToItem(anonymous);
  assert.equal(item.label, '$(symbol-file) """Authentication helpers for the HTTP API."""');
  assert.equal(item.description, 'src/auth.py:1');
  assert.equal(item.detail, '0.22 · code');
});

test('multi-root: the description names the root folder', () => {
  assert.equal(hitToItem(validateToken, { multiRoot: true }).description, 'ws · src/auth.py:19');
});

test('results keep the server order and drop malformed entries', () => {
  const items = resultsToItems([anonymous, validateToken, null as unknown as Hit, { path: 3 } as unknown as Hit]);
  assert.deepEqual(
    items.map((i) => i.line),
    [1, 19],
  );
  assert.deepEqual(resultsToItems(undefined), []);
});

test('uri and range fall back to root + path and 1-based lines', () => {
  const bare: Hit = { path: 'lib/matrix.c', start_line: 3, end_line: 9, score: 0.5, root: '/tmp/ws' };
  assert.equal(hitUri(bare), 'file:///tmp/ws/lib/matrix.c');
  const item = hitToItem(bare);
  assert.deepEqual(item.range, { start: { line: 2, character: 0 }, end: { line: 9, character: 0 } });
  assert.equal(item.label, '$(symbol-file) lib/matrix.c');
  assert.equal(hitUri({ ...bare, root: '/tmp/a b' }), 'file:///tmp/a%20b/lib/matrix.c');
});

test('lineRange matches the server: whole lines, ending at the start of the next line', () => {
  assert.deepEqual(lineRange(19, 25), { start: { line: 18, character: 0 }, end: { line: 25, character: 0 } });
  assert.deepEqual(lineRange(1, 1), { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } });
});

test('firstLine trims, skips blank lines and shortens', () => {
  assert.equal(firstLine('\n\n   fn main() {  \n}'), 'fn main() {');
  assert.equal(firstLine(undefined), '');
  assert.equal(firstLine('x'.repeat(200), 10), 'xxxxxxxxx…');
});

test('kind icons and scores', () => {
  assert.equal(kindIcon('method'), 'symbol-method');
  assert.equal(kindIcon('impl'), 'symbol-class');
  assert.equal(kindIcon('trait'), 'symbol-interface');
  assert.equal(kindIcon('section'), 'symbol-key');
  assert.equal(kindIcon('something-new'), 'symbol-file');
  assert.equal(kindIcon(undefined), 'symbol-file');
  assert.equal(formatScore(0.56632346), '0.57');
  assert.equal(formatScore(Number.NaN), '?');
});

test('search titles say how many, how fast, and whether the index is still building', () => {
  assert.equal(searchTitle(undefined), 'raggrep: Semantic Search');
  assert.equal(searchTitle({ results: [validateToken], took_ms: 12.6 }), 'raggrep: Semantic Search — 1 result in 13 ms');
  assert.equal(
    searchTitle({ results: [validateToken, anonymous], partial: true }),
    'raggrep: Semantic Search — 2 results (index still building)',
  );
  // The server's "no confident match" is said, once there is something to show.
  assert.equal(
    searchTitle({ results: [validateToken], took_ms: 3, confidence: 0.03, no_confident_match: true }),
    'raggrep: Semantic Search — 1 result in 3 ms — no confident match, closest code',
  );
  assert.equal(searchTitle({ results: [], no_confident_match: true }), 'raggrep: Semantic Search — 0 results');
  assert.equal(searchTitle({ results: [validateToken], confidence: 0.9, no_confident_match: false }), 'raggrep: Semantic Search — 1 result');
});

test('search: the server\'s degraded is said in the title and explains an empty answer', () => {
  // As the server sends it for a root whose index another model built (workspace.rs).
  const refused = '/work/app: searched by words only: its index was built with model all-minilm-l6-v2-int8 (384-d) and this server embeds with all-minilm-l6-v2-code2-int8 (384-d); it is being rebuilt';
  const empty = { results: [], partial: true, degraded: refused };
  assert.equal(searchTitle(empty), `raggrep: Semantic Search — 0 results (index still building) — degraded: ${refused}`);
  assert.equal(noResultsDetail(empty), refused, 'the reason outranks "still being built"');
  assert.equal(noResultsDetail({ results: [], partial: true }), 'The index is still being built.');
  assert.equal(noResultsDetail({ results: [], partial: false, degraded: null }), undefined);
  assert.equal(noResultsDetail(undefined), undefined);
  const lexical = '/work/app: lexical search failed (…); `raggrep index` repairs it';
  assert.equal(searchTitle({ results: [validateToken], degraded: lexical }), `raggrep: Semantic Search — 1 result — degraded: ${lexical}`);
});

test('similar: empty selection sends the cursor line, a selection is sent as is; titles are 1-based', () => {
  const cursor = { start: { line: 21, character: 4 }, end: { line: 21, character: 4 } };
  assert.deepEqual(similarRange(cursor), { start: { line: 21, character: 0 }, end: { line: 22, character: 0 } });
  const selection = { start: { line: 3, character: 2 }, end: { line: 13, character: 5 } };
  assert.equal(similarRange(selection), selection);
  // The code action's range for validate_token (lines 19-25).
  assert.equal(similarTitle('src/auth.py', { start: { line: 18, character: 0 }, end: { line: 25, character: 0 } }), 'Similar to src/auth.py:19-25');
  assert.equal(similarTitle('lib/unique.js', selection), 'Similar to lib/unique.js:4-14');
  assert.equal(similarTitle('a.rs', { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }), 'Similar to a.rs:1-1');
});

test('serverSettings sends the server keys only, with sane values', () => {
  const config: Record<string, unknown> = {
    enabled: true,
    include: ['vendor/**', '', 3],
    exclude: [],
    maxFileSize: 1048576,
    memoryBudgetMb: 500.7,
    modelDir: '  ',
    defaultK: 10,
    logLevel: 'debug',
    team: false,
    indexThreads: 1.5,
    indexPriority: 'normal',
    'server.path': '/x/raggrep',
    'findSimilar.show': 'peek',
  };
  assert.deepEqual(serverSettings((k) => config[k]), {
    enabled: true,
    include: ['vendor/**'],
    exclude: [],
    maxFileSize: 1048576,
    memoryBudgetMb: 500,
    defaultK: 10,
    logLevel: 'debug',
    team: false,
    indexThreads: 1,
    indexPriority: 'normal',
  });
  const bad: Record<string, unknown> = {
    enabled: 'yes',
    maxFileSize: -1,
    defaultK: 0,
    logLevel: 'loud',
    modelDir: 'bge-small',
    indexThreads: -2,
    indexPriority: 'idle',
  };
  assert.deepEqual(serverSettings((k) => bad[k]), { modelDir: 'bge-small' });
});

test('serverSettings sends team: false, true, a trimmed URL; an empty URL is false', () => {
  assert.deepEqual(serverSettings((k) => (k === 'team' ? true : undefined)), { team: true });
  assert.deepEqual(serverSettings((k) => (k === 'team' ? false : undefined)), { team: false });
  assert.deepEqual(serverSettings((k) => (k === 'team' ? ' postgres://dev@db.internal/code ' : undefined)), {
    team: 'postgres://dev@db.internal/code',
  });
  assert.deepEqual(serverSettings((k) => (k === 'team' ? '  ' : undefined)), { team: false });
  assert.deepEqual(serverSettings((k) => (k === 'team' ? 1 : undefined)), {});
});

const readyRoot = {
  root: '/home/me/ws',
  files: 8,
  chunks: 18,
  pending: 0,
  enabled: true,
  indexing: false,
  partial: false,
  last_error: null,
  memory_level: 'ok',
  reason: null,
};

test('status lines, one per root', () => {
  assert.deepEqual(formatStatus({ ...readyRoot, roots: [readyRoot] }, '/home/me'), ['~/ws: 8 files, 18 chunks']);
  assert.deepEqual(
    formatStatus({ roots: [{ root: '/b', enabled: false, indexing: false, reason: 'turned off for this workspace' }] }),
    ['/b: no index yet, off, turned off for this workspace'],
  );
  assert.deepEqual(formatStatus({}), ['no workspace folder yet (the server is starting)']);
  assert.deepEqual(statusRoots({ ...readyRoot }), [readyRoot]); // an answer without `roots`
});

test('status bar: chunk count, indexing progress, off, errors', () => {
  assert.equal(statusBar({ kind: 'status', status: { roots: [readyRoot] } }).text, '$(database) raggrep: 18 chunks');
  assert.match(statusBar({ kind: 'status', status: { roots: [readyRoot] } }).tooltip, /8 files, 18 chunks/);
  assert.equal(
    statusBar({ kind: 'status', status: { roots: [readyRoot, { ...readyRoot, root: '/b', chunks: 2 }] } }).text,
    '$(database) raggrep: 20 chunks',
  );
  assert.equal(statusBar({ kind: 'status', status: { roots: [{ ...readyRoot, enabled: false }] } }).text, '$(circle-slash) raggrep: off');
  assert.equal(statusBar({ kind: 'status', status: { roots: [{ ...readyRoot, indexing: true }] } }).text, '$(sync~spin) raggrep: indexing (18 chunks)');
  assert.equal(statusBar({ kind: 'status', status: { roots: [{ root: '/a', indexing: true }] } }).text, '$(sync~spin) raggrep: indexing');
  assert.equal(statusBar({ kind: 'status', status: { roots: [{ ...readyRoot, partial: true }] } }).text, '$(database) raggrep: 18 chunks (partial)');
  assert.equal(statusBar({ kind: 'status', status: { roots: [{ ...readyRoot, last_error: 'disk full' }] } }).text, '$(warning) raggrep: 18 chunks');
  assert.equal(statusBar({ kind: 'progress', percentage: 40.4, title: 'raggrep: indexing ws', message: 'embedding 4/10 chunks' }).text, '$(sync~spin) raggrep: indexing 40%');
  assert.equal(statusBar({ kind: 'progress', title: 'raggrep: indexing ws', message: 'embedding' }).tooltip, 'raggrep: indexing ws: embedding');
  assert.equal(statusBar({ kind: 'error', message: 'not found' }).text, '$(error) raggrep');
  assert.equal(statusBar({ kind: 'starting' }).text, '$(loading~spin) raggrep');
});

test('status bar while paused: the pause icon and "paused" in text and tooltip, whatever it showed before', () => {
  // The server's status while paused (server/src/workspace.rs: every root gets this reason).
  const reason = 'indexing is paused (resume with raggrep.resume, or SIGUSR2 to raggrep watch)';
  const pausedRoot = { ...readyRoot, reason };
  const bar = statusBar({ kind: 'status', status: { ...pausedRoot, roots: [pausedRoot] }, paused: true });
  assert.equal(bar.text, '$(debug-pause) raggrep: paused (18 chunks)');
  assert.match(bar.tooltip, /^raggrep: indexing paused\n/);
  assert.ok(bar.tooltip.includes(`/ws: 8 files, 18 chunks, ${reason}`), bar.tooltip);
  assert.match(bar.tooltip, /"raggrep: Resume Indexing" goes on\.\nClick for details\.$/);
  // Paused wins over indexing, partial, an error; off roots are not counted.
  const busy = { roots: [{ ...readyRoot, indexing: true, partial: true, last_error: 'disk full' }, { ...readyRoot, root: '/b', chunks: 5, enabled: false }] };
  assert.equal(statusBar({ kind: 'status', status: busy, paused: true }).text, '$(debug-pause) raggrep: paused (18 chunks)');
  // No index yet (paused before the first one finished): no count.
  assert.equal(statusBar({ kind: 'status', status: { roots: [{ root: '/a', indexing: true, reason }] }, paused: true }).text, '$(debug-pause) raggrep: paused');
  // Paused in the middle of an update: how far it got.
  const mid = statusBar({ kind: 'progress', percentage: 40.4, title: 'raggrep: indexing ws', message: 'embedding 4/10 chunks', paused: true });
  assert.equal(mid.text, '$(debug-pause) raggrep: paused at 40%');
  assert.equal(mid.tooltip.split('\n')[0], 'raggrep: indexing paused at 40% (raggrep: indexing ws: embedding 4/10 chunks)');
  assert.equal(statusBar({ kind: 'progress', paused: true }).text, '$(debug-pause) raggrep: paused');
  // Resumed (paused false or absent): back to what it showed before.
  assert.equal(statusBar({ kind: 'status', status: { roots: [readyRoot] }, paused: false }).text, '$(database) raggrep: 18 chunks');
  assert.equal(statusBar({ kind: 'progress', percentage: 40, paused: false }).text, '$(sync~spin) raggrep: indexing 40%');
  for (const state of [{ roots: [readyRoot] }, busy]) {
    const view = statusBar({ kind: 'status', status: state });
    assert.ok(!view.text.includes('debug-pause') && !/paused/.test(view.text + view.tooltip), view.text);
  }
  // Errors and start-up are not hidden by a pause (they have no `paused`).
  assert.equal(statusBar({ kind: 'error', message: 'stopped' }).text, '$(error) raggrep');
});

test('pause/resume messages follow the server\'s answer', () => {
  assert.deepEqual(pauseMessage({ paused: true }, true), {
    paused: true,
    message: 'raggrep: indexing paused (file changes are queued; searches keep working).',
  });
  assert.deepEqual(pauseMessage({ paused: false }, false), { paused: false, message: 'raggrep: indexing resumed.' });
  // The answer is the server's state, even when it is not what was asked.
  assert.equal(pauseMessage({ paused: true }, false).paused, true);
  // No usable answer: what was asked.
  assert.equal(pauseMessage({}, true).paused, true);
  assert.equal(pauseMessage(undefined, false).paused, false);
  assert.equal(pauseMessage({ paused: 'yes' }, false).paused, false);
});

test('$/progress begin/report/end fold into one state', () => {
  let s = foldProgress(undefined, { kind: 'begin', title: 'raggrep: indexing ws', message: '8 files', percentage: 0 });
  assert.deepEqual(s, { title: 'raggrep: indexing ws', message: '8 files', percentage: 0 });
  s = foldProgress(s, { kind: 'report', message: 'embedding 9/18 chunks', percentage: 50 });
  assert.deepEqual(s, { title: 'raggrep: indexing ws', message: 'embedding 9/18 chunks', percentage: 50 });
  s = foldProgress(s, { kind: 'report', message: 'building the vector graph' });
  assert.equal(s?.percentage, 50);
  assert.equal(foldProgress(s, { kind: 'end', message: 'done' }), undefined);
});

// The `team` section of `raggrep.search` with the `team` setting on (server/src/wire.rs
// TeamSection; snapshot search_response_with_the_team_index_as_an_extra_source).
const teamHit: Hit = {
  location: 'src/auth/token.rs:12-30',
  path: 'src/auth/token.rs',
  start_line: 12,
  end_line: 30,
  symbol: 'TokenValidator::validate',
  kind: 'method',
  language: 'rust',
  score: 0.735,
  snippet: 'pub fn validate(&self, token: &str) -> Result<Claims> {\n    let claims = self.decode(token)?;\n    Ok(claims)\n',
  repo: 'github.com/acme/billing@main',
};
const withTeam: SearchResult = {
  query: 'validate token',
  took_ms: 3.0,
  partial: false,
  results: [validateToken],
  team: { source: 'postgres://dev:***@db.internal/code', took_ms: 18.5, results: [teamHit] },
};

test('team section: a separator naming the team index, then one row per hit with its repository', () => {
  const rows = teamRows(withTeam.team);
  assert.equal(rows.length, 2);
  assert.deepEqual(rows[0], { kind: 'separator', label: 'team index' });
  assert.equal(rows[1].kind, 'hit');
  const item = rows[1].kind === 'hit' ? rows[1].item : undefined;
  assert.ok(item);
  assert.equal(item.label, '$(symbol-method) TokenValidator::validate');
  assert.equal(item.description, 'github.com/acme/billing@main · src/auth/token.rs:12');
  assert.equal(item.detail, '0.73 · method · pub fn validate(&self, token: &str) -> Result<Claims> {');
  assert.equal(item.repo, 'github.com/acme/billing@main');
  assert.equal(item.line, 12);
  assert.equal(item.hit, teamHit);
  assert.equal(teamSeparatorLabel({}), 'team index');
});

test('team hits never lead to a file: no uri or range, a raggrep-team document instead', () => {
  for (const row of teamRows(withTeam.team)) {
    if (row.kind !== 'hit') continue;
    assert.equal('uri' in row.item, false);
    assert.equal('range' in row.item, false);
    assert.equal(row.item.document.path, '/github.com/acme/billing@main/src/auth/token.rs');
    assert.equal(row.item.document.query, 'L12-30');
  }
  assert.equal(TEAM_SCHEME, 'raggrep-team');
  // A team hit that came with the local results is not taken for a file of this workspace.
  assert.deepEqual(resultsToItems([teamHit, validateToken]).map((i) => i.uri), ['file:///work/ws/src/auth.py']);
  // Unless the server did give it a local uri.
  assert.equal(resultsToItems([{ ...teamHit, uri: 'file:///work/ws/src/auth/token.rs' }]).length, 1);
});

test('a team document: a header comment with repository, location and symbol, then the snippet', () => {
  const doc = teamDocument(teamHit);
  assert.equal(doc.languageId, 'rust');
  assert.equal(
    doc.content,
    '// github.com/acme/billing@main · src/auth/token.rs:12-30 · TokenValidator::validate (team index, read-only; first 3 of 19 lines)\n' +
      'pub fn validate(&self, token: &str) -> Result<Claims> {\n    let claims = self.decode(token)?;\n    Ok(claims)\n',
  );
  // The whole chunk when the server sends it (`text`), the snippet otherwise.
  const whole = teamDocument({ ...teamHit, start_line: 12, end_line: 14, text: 'fn a() {\n    b()\n}\n' });
  assert.equal(whole.content, '// github.com/acme/billing@main · src/auth/token.rs:12-14 · TokenValidator::validate (team index, read-only)\nfn a() {\n    b()\n}\n');
  const python = teamDocument({ ...teamHit, language: 'python', symbol: null, start_line: 1, end_line: 2, snippet: 'import os\nimport re' });
  assert.equal(python.content, '# github.com/acme/billing@main · src/auth/token.rs:1-2 (team index, read-only)\nimport os\nimport re\n');
  const text = teamDocument({ ...teamHit, language: 'text', path: '../../etc/notes.txt' });
  assert.equal(text.languageId, undefined);
  assert.match(text.content, /^github\.com\/acme\/billing@main · \.\.\/\.\.\/etc\/notes\.txt:12-30 /);
  assert.equal(text.path, '/github.com/acme/billing@main/etc/notes.txt');
  assert.equal(languageId('tsx'), 'typescriptreact');
  assert.equal(languageId('cpp'), 'cpp');
  assert.equal(languageId(undefined), undefined);
  assert.equal(commentLine('markdown', 'x'), '<!-- x -->');
  assert.equal(commentLine('go', 'x'), '// x');
  // The languages chunked by syntax since issue 53 open with their own mode and comment.
  assert.equal(languageId('ruby'), 'ruby');
  assert.equal(languageId('bash'), 'shellscript');
  assert.equal(languageId('csharp'), 'csharp');
  assert.equal(commentLine('ruby', 'x'), '# x');
  assert.equal(commentLine('haskell', 'x'), '-- x');
  assert.equal(commentLine('kotlin', 'x'), '// x');
  // YAML, TOML and JSON (chunked by their keys) open as themselves; JSON as JSON with comments,
  // so the header line is a comment there too.
  assert.equal(languageId('yaml'), 'yaml');
  assert.equal(languageId('json'), 'jsonc');
  assert.equal(commentLine('toml', 'x'), '# x');
  assert.equal(commentLine('json', 'x'), '// x');
  assert.equal(languageId('objc'), 'objective-c');
  assert.equal(commentLine('ocaml', 'x'), '(* x *)');
  assert.equal(commentLine('r', 'x'), '# x');
});

test('a team index that could not answer: the separator and one error row, no hit rows', () => {
  const error = 'cannot connect to the team index at postgres://dev@db.internal/code: connection refused (trying again in 29 s)';
  const rows = teamRows({ source: 'postgres://dev@db.internal/code', took_ms: 0.1, results: [], error });
  assert.deepEqual(rows, [
    { kind: 'separator', label: 'team index' },
    { kind: 'error', label: '$(warning) The team index did not answer', detail: error },
  ]);
});

test('no team section, or one with neither hits nor an error: no team rows, local rows as before', () => {
  assert.deepEqual(teamRows(undefined), []);
  assert.deepEqual(teamRows(null), []);
  assert.deepEqual(teamRows({ source: 'postgres://dev@db/code', took_ms: 4, results: [] }), []);
  assert.deepEqual(teamRows({ source: 'x', results: [null as unknown as Hit, { path: 3 } as unknown as Hit] }), []);
  // The local rows do not depend on the team section.
  assert.deepEqual(resultsToItems(withTeam.results), resultsToItems([validateToken]));
  assert.deepEqual(resultsToItems(withTeam.results)[0], hitToItem(validateToken));
  assert.equal(searchTitle({ ...withTeam, team: undefined }), 'raggrep: Semantic Search — 1 result in 3 ms');
  assert.equal(searchTitle(withTeam), 'raggrep: Semantic Search — 1 result in 3 ms, 1 from the team index');
});

test('history rows: subject, then date, short id, author (and merge), then paths and definitions', () => {
  const items = historyItems({
    commits: 6489,
    results: [
      {
        commit: '3a4d330a94dc13387ead85a82af3659df6a7d2cc',
        date: '2024-03-01',
        author: 'Tess',
        subject: 'Drop the proxy credentials on redirects',
        files: ['src/sessions.py'],
        symbols: ['rebuild_proxies'],
        score: 0.9,
      },
      { commit: '9f1c2e7b5d3a4c6e8f0a1b2c3d4e5f6a7b8c9d0e', date: '2024-02-01', subject: 'Merge pull request #12', files: ['a.py'], more_files: 3, merge: true },
      null,
      { subject: 'no id' },
    ],
  });
  assert.deepEqual(items, [
    {
      label: '$(git-commit) Drop the proxy credentials on redirects',
      description: '2024-03-01 · 3a4d330a94dc · Tess',
      detail: 'src/sessions.py · changed: rebuild_proxies',
      commit: '3a4d330a94dc13387ead85a82af3659df6a7d2cc',
    },
    {
      label: '$(git-commit) Merge pull request #12',
      description: '2024-02-01 · 9f1c2e7b5d3a · merge',
      detail: 'a.py and 3 more',
      commit: '9f1c2e7b5d3a4c6e8f0a1b2c3d4e5f6a7b8c9d0e',
    },
  ]);
  assert.deepEqual(historyItems(null), []);
  assert.deepEqual(historyItems({ results: 'x' }), []);
});
