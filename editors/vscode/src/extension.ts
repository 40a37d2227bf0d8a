// The VS Code client of `raggrep lsp`: starts the server, passes settings, and puts its results
// into VS Code's own UI. All search logic is in the server.

import { execFile } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from 'vscode-languageclient/node';
import { showResults, showSearch } from './pick';
import {
  BarState,
  foldProgress,
  formatStatus,
  Hit,
  historyItems,
  hitRange,
  hitUri,
  pauseMessage,
  Range,
  SearchResult,
  serverSettings,
  similarRange,
  similarTitle,
  Status,
  statusBar,
  statusRoots,
} from './results';
import { findServer } from './server';
import { registerTeamDocuments } from './team';

/** The command the server's "Find similar code" code action names (run on the server). */
const SERVER_FIND_SIMILAR = 'raggrep.findSimilar';

type Progress = { title?: string; message?: string; percentage?: number };

class Raggrep implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private startError: { message: string; fix?: string } | undefined;
  private readonly output: vscode.OutputChannel;
  private readonly bar: vscode.StatusBarItem;
  private readonly progress = new Map<string, Progress>();
  private status: Status | undefined;
  /** Why the last `raggrep.status` failed (e.g. the model could not be loaded). */
  private statusError: string | undefined;
  /** Indexing paused (`raggrep.pause`); the server forgets it when it restarts, and so do we. */
  private paused = false;
  private sentSettings = '';
  private statusTimer: NodeJS.Timeout | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly context: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('raggrep');
    this.bar = vscode.window.createStatusBarItem('raggrep.status', vscode.StatusBarAlignment.Left, 10);
    this.bar.name = 'raggrep';
    this.bar.command = 'raggrep.showStatus';
    this.disposables.push(this.output, this.bar);
  }

  dispose(): void {
    if (this.statusTimer) clearTimeout(this.statusTimer);
    for (const d of this.disposables) d.dispose();
  }

  private config(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration('raggrep');
  }

  private settings(): Record<string, unknown> {
    const config = this.config();
    return serverSettings((key) => config.get(key));
  }

  private show(state: BarState): void {
    const view = statusBar(state);
    this.bar.text = view.text;
    this.bar.tooltip = view.tooltip;
    this.bar.show();
  }

  /** The bar from what is known: running progress first, else the last status. */
  private render(): void {
    if (this.startError) {
      this.show({ kind: 'error', message: this.startError.message });
      return;
    }
    if (!vscode.workspace.workspaceFolders?.length) {
      this.show({ kind: 'noFolder' });
      return;
    }
    const running = [...this.progress.values()].pop();
    if (running) {
      this.show({ kind: 'progress', ...running, paused: this.paused });
    } else if (this.statusError) {
      this.show({ kind: 'error', message: this.statusError });
    } else if (this.status) {
      this.show({ kind: 'status', status: this.status, paused: this.paused });
    } else {
      this.show({ kind: 'starting' });
    }
  }

  /** Starts the server for the open folders (no folder: nothing to index, no server). */
  async start(): Promise<void> {
    if (this.starting) return this.starting;
    this.starting = this.doStart().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async doStart(): Promise<void> {
    this.startError = undefined;
    this.status = undefined;
    this.statusError = undefined;
    this.paused = false;
    this.progress.clear();
    if (!vscode.workspace.workspaceFolders?.length) {
      this.render();
      return;
    }
    this.render();
    const config = this.config();
    const found = findServer({
      configured: config.get<string>('server.path'),
      extensionPath: this.context.extensionPath,
      env: process.env,
    });
    if (!found.ok) {
      this.startError = { message: found.message, fix: found.fix };
      this.render();
      this.output.appendLine(`${found.message} ${found.fix}`);
      void vscode.window
        .showErrorMessage(`raggrep: ${found.message} ${found.fix}`, 'Open Settings', 'Retry')
        .then((choice) => {
          if (choice === 'Open Settings') {
            void vscode.commands.executeCommand('workbench.action.openSettings', 'raggrep.server.path');
          } else if (choice === 'Retry') {
            void this.restart();
          }
        });
      return;
    }
    this.output.appendLine(`starting ${found.path} lsp (found via ${found.source})`);
    const env = { ...process.env, ...(config.get<Record<string, string>>('server.env') ?? {}) };
    const serverOptions: ServerOptions = { command: found.path, args: ['lsp'], options: { env } };
    const settings = this.settings();
    this.sentSettings = JSON.stringify(settings);
    const clientOptions: LanguageClientOptions = {
      // The server indexes every file of the workspace folders; open files of any language
      // are synced so that unsaved edits are searchable.
      documentSelector: [{ scheme: 'file' }],
      initializationOptions: settings,
      outputChannel: this.output,
      middleware: {
        // Indexing progress for the status bar, seen on its way to the client's own window
        // progress indicator (the server reports `$/progress` on a token per indexing run).
        handleWorkDoneProgress: (token, params, next) => {
          this.onProgress(String(token), params);
          next(token, params);
        },
        // The code action's command runs on the server and its result would be dropped: route it
        // to our command, which runs it and shows the results.
        provideCodeActions: async (document, range, context, token, next) => {
          const actions = await next(document, range, context, token);
          return actions?.map((action) => rerouteFindSimilar(action));
        },
      },
    };
    const client = new LanguageClient('raggrep', 'raggrep', serverOptions, clientOptions);
    this.client = client;
    client.onNotification('raggrep/indexUpdated', () => this.refreshStatus());
    let started = false;
    client.onDidChangeState((e) => {
      if (this.client !== client) return;
      if (e.newState === State.Stopped) {
        // Crashed (the client restarts it a few times) or gave up.
        this.startError = { message: 'the language server stopped (see the "raggrep" output channel)' };
        this.progress.clear();
        this.render();
      } else if (e.newState === State.Running && started) {
        // Restarted after a crash: a new server, not paused.
        this.startError = undefined;
        this.paused = false;
        void this.refreshStatus();
      }
    });
    try {
      await client.start();
    } catch (err) {
      this.startError = { message: `the language server did not start: ${errorText(err)}` };
      this.render();
      return;
    }
    started = true;
    this.startError = undefined;
    void this.refreshStatus();
  }

  get running(): boolean {
    return this.client !== undefined;
  }

  private onProgress(token: string, value: { kind?: string; title?: string; message?: string; percentage?: number }): void {
    const next = foldProgress(this.progress.get(token), value);
    if (next) {
      this.progress.set(token, next);
      this.render();
    } else {
      this.progress.delete(token);
      void this.refreshStatus();
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch {
        // already stopped
      }
    }
  }

  /** Runs a raggrep command on the server (workspace/executeCommand) and returns its result. */
  async execute<T>(command: string, args?: unknown): Promise<T> {
    if (this.starting && this.client?.state !== State.Running) await this.starting;
    if (this.startError) {
      throw new Error(`${this.startError.message}${this.startError.fix ? ' ' + this.startError.fix : ''}`);
    }
    const client = this.client;
    if (!client || client.state !== State.Running) {
      throw new Error(vscode.workspace.workspaceFolders?.length ? 'the language server is not running' : 'open a folder first: raggrep indexes workspace folders');
    }
    const result = await client.sendRequest(ExecuteCommandRequest.type, {
      command,
      arguments: args === undefined ? [] : [args],
    });
    return (result ?? {}) as T;
  }

  async refreshStatus(): Promise<void> {
    if (!this.client || this.client.state !== State.Running) return;
    try {
      this.status = await this.execute<Status>('raggrep.status');
      this.statusError = undefined;
    } catch (err) {
      this.statusError = errorText(err);
      this.output.appendLine(`raggrep.status failed: ${this.statusError}`);
    }
    this.render();
    // Indexing without a progress report (nothing to embed): look again shortly. Not while
    // paused: nothing moves until Resume, which looks again itself.
    if (this.statusTimer) clearTimeout(this.statusTimer);
    if (!this.paused && this.progress.size === 0 && statusRoots(this.status).some((r) => r.indexing)) {
      this.statusTimer = setTimeout(() => void this.refreshStatus(), 2000);
    }
  }

  /** Settings changed: restart for server.*, else send the server's keys if they changed. */
  async configurationChanged(e: vscode.ConfigurationChangeEvent): Promise<void> {
    if (e.affectsConfiguration('raggrep.server')) {
      await this.restart();
      return;
    }
    if (!e.affectsConfiguration('raggrep')) return;
    const settings = this.settings();
    const json = JSON.stringify(settings);
    if (json === this.sentSettings || !this.client || this.client.state !== State.Running) return;
    this.sentSettings = json;
    await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings });
    await this.refreshStatus();
  }

  // Commands.

  search(): void {
    const editor = vscode.window.activeTextEditor;
    const selected = editor && !editor.selection.isEmpty && editor.selection.isSingleLine ? editor.document.getText(editor.selection) : '';
    showSearch((query) => this.execute<SearchResult>('raggrep.search', { query }), selected.trim(), {
      log: (line) => this.output.appendLine(line),
    });
  }

  async findSimilar(args?: unknown): Promise<void> {
    let uri: string;
    let range: Range;
    if (isSimilarArgs(args)) {
      ({ uri, range } = args);
    } else {
      const editor = vscode.window.activeTextEditor;
      if (!editor) {
        void vscode.window.showWarningMessage('raggrep: open a file and put the cursor in a function (or select code) to find similar code.');
        return;
      }
      uri = editor.document.uri.toString();
      const s = editor.selection;
      range = similarRange({
        start: { line: s.start.line, character: s.start.character },
        end: { line: s.end.line, character: s.end.character },
      });
    }
    let result: { results?: Hit[]; source?: { uri: string; range: Range } };
    try {
      result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'raggrep: finding similar code' },
        () => this.execute<typeof result>(SERVER_FIND_SIMILAR, { uri, range }),
      );
    } catch (err) {
      void vscode.window.showErrorMessage(`raggrep: Find Similar Code failed: ${errorText(err)}`);
      return;
    }
    const hits = result.results ?? [];
    // The server widens the range to the indexed units it touches (the function under the
    // cursor, say) and says which lines it used.
    range = result.source?.range ?? range;
    const source = vscode.Uri.parse(uri);
    const title = similarTitle(vscode.workspace.asRelativePath(source, false), range);
    if (hits.length === 0) {
      void vscode.window.showInformationMessage(`raggrep: no similar code found (${title.toLowerCase()}).`);
      return;
    }
    const show = this.config().get<string>('findSimilar.show');
    this.output.appendLine(`find similar: ${hits.length} results for ${title} (${show})`);
    if (show !== 'peek') {
      showResults(`raggrep: ${title}`, hits);
      return;
    }
    const locations = hits.map((hit) => {
      const r = hitRange(hit);
      return new vscode.Location(vscode.Uri.parse(hitUri(hit)), new vscode.Range(r.start.line, 0, r.end.line, 0));
    });
    const position = new vscode.Position(range.start.line, 0);
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.uri.toString() !== source.toString()) {
      await vscode.window.showTextDocument(source, { selection: new vscode.Range(position, position) });
    }
    await vscode.commands.executeCommand('editor.action.peekLocations', source, position, locations, 'peek');
  }


  async reindex(): Promise<void> {
    try {
      const result = await this.execute<{ queued?: number }>('raggrep.reindex');
      const n = result.queued ?? 0;
      void vscode.window.showInformationMessage(`raggrep: reindexing ${n} workspace folder${n === 1 ? '' : 's'}.`);
      await this.refreshStatus();
    } catch (err) {
      void vscode.window.showErrorMessage(`raggrep: Reindex failed: ${errorText(err)}`);
    }
  }

  async showStatus(): Promise<void> {
    if (this.startError) {
      const choice = await vscode.window.showErrorMessage(
        `raggrep: ${this.startError.message}${this.startError.fix ? ' ' + this.startError.fix : ''}`,
        'Open Settings',
        'Restart',
        'Show Log',
      );
      if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'raggrep.server.path');
      if (choice === 'Restart') void this.restart();
      if (choice === 'Show Log') this.output.show();
      return;
    }
    let status: Status;
    try {
      status = await this.execute<Status>('raggrep.status');
    } catch (err) {
      void vscode.window.showErrorMessage(`raggrep: Show Status failed: ${errorText(err)}`);
      return;
    }
    this.status = status;
    this.render();
    const lines = formatStatus(status, os.homedir());
    this.output.appendLine(`status:\n  ${lines.join('\n  ')}`);
    const actions = this.paused ? ['Resume', 'Reindex', 'Toggle', 'Show Log'] : ['Reindex', 'Toggle', 'Show Log'];
    const choice = await vscode.window.showInformationMessage(`raggrep: ${lines.join('; ')}`, ...actions);
    if (choice === 'Resume') void this.setPaused(false);
    if (choice === 'Reindex') void this.reindex();
    if (choice === 'Toggle') void this.toggle();
    if (choice === 'Show Log') this.output.show();
  }

  /**
   * Pauses (`raggrep.pause`) or resumes (`raggrep.resume`) indexing: while paused the update under
   * way stops after its current batch and file changes are queued; searches keep working.
   */
  async setPaused(pause: boolean): Promise<void> {
    try {
      const answer = await this.execute<{ paused?: boolean }>(pause ? 'raggrep.pause' : 'raggrep.resume');
      const { paused, message } = pauseMessage(answer, pause);
      this.paused = paused;
      this.render();
      void vscode.window.showInformationMessage(message);
      await this.refreshStatus();
    } catch (err) {
      void vscode.window.showErrorMessage(`raggrep: ${pause ? 'Pause' : 'Resume'} Indexing failed: ${errorText(err)}`);
    }
  }

  /** Turns indexing of the current workspace folder on/off (the server remembers it). */
  async toggle(): Promise<void> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    let folder: vscode.WorkspaceFolder | undefined;
    const active = vscode.window.activeTextEditor?.document.uri;
    if (active) folder = vscode.workspace.getWorkspaceFolder(active);
    if (!folder && folders.length === 1) folder = folders[0];
    if (!folder && folders.length > 1) folder = await vscode.window.showWorkspaceFolderPick({ placeHolder: 'Toggle raggrep indexing for which folder?' });
    if (!folder) {
      if (folders.length === 0) void vscode.window.showWarningMessage('raggrep: open a folder first.');
      return;
    }
    try {
      const result = await this.execute<{ roots?: { root: string; enabled: boolean }[] }>('raggrep.toggle', { uri: folder.uri.toString() });
      const roots = result.roots ?? [];
      if (roots.length === 0) {
        void vscode.window.showWarningMessage(`raggrep: ${folder.name} is not a folder the server knows yet (it is starting).`);
      }
      for (const r of roots) {
        void vscode.window.showInformationMessage(`raggrep: indexing of ${folder.name} is now ${r.enabled ? 'on' : 'off'}.`);
      }
      await this.refreshStatus();
    } catch (err) {
      void vscode.window.showErrorMessage(`raggrep: Toggle failed: ${errorText(err)}`);
    }
  }

  /**
   * The commits that changed the function under the cursor (the file's, outside a function), or
   * without an editor the commits a question describes: a QuickPick; choosing one opens what it
   * changed (in that file) as a diff.
   */
  async showHistory(from?: unknown): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    let args: Record<string, unknown>;
    let title: string;
    let file: vscode.Uri | undefined;
    // From the code action: its file and line; from the palette: the cursor's.
    const at = from as { uri?: unknown; line?: unknown } | undefined;
    if (typeof at?.uri === 'string' && typeof at.line === 'number') {
      file = vscode.Uri.parse(at.uri);
      args = { uri: at.uri, line: at.line };
      title = `raggrep: History of ${vscode.workspace.asRelativePath(file, false)}:${at.line + 1}`;
    } else if (editor && editor.document.uri.scheme === 'file') {
      file = editor.document.uri;
      const line = editor.selection.active.line;
      args = { uri: file.toString(), line };
      title = `raggrep: History of ${vscode.workspace.asRelativePath(file, false)}:${line + 1}`;
    } else {
      const query = await vscode.window.showInputBox({ title: 'raggrep: Show History', prompt: 'What to look for in the history' });
      if (!query?.trim()) return;
      args = { query: query.trim() };
      title = `raggrep: History — ${query.trim()}`;
    }
    let items;
    try {
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'raggrep: reading the history' },
        () => this.execute<unknown>('raggrep.history', args),
      );
      items = historyItems(result);
    } catch (err) {
      void vscode.window.showErrorMessage(`raggrep: Show History failed: ${errorText(err)}`);
      return;
    }
    if (items.length === 0) {
      void vscode.window.showInformationMessage(`${title}: no commit found.`);
      return;
    }
    const picked = await vscode.window.showQuickPick(items, { title, matchOnDescription: true, matchOnDetail: true });
    if (!picked) return;
    const folder = file ? vscode.workspace.getWorkspaceFolder(file) : vscode.workspace.workspaceFolders?.[0];
    const gitArgs = ['show', '--no-color', '--no-ext-diff', picked.commit];
    if (file && folder) gitArgs.push('--', path.relative(folder.uri.fsPath, file.fsPath));
    execFile('git', gitArgs, { cwd: folder?.uri.fsPath, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        void vscode.window.showErrorMessage(`raggrep: git show ${picked.commit.slice(0, 12)} failed: ${String(stderr || err.message).trim()}`);
        return;
      }
      void vscode.workspace
        .openTextDocument({ language: 'diff', content: stdout })
        .then((doc) => vscode.window.showTextDocument(doc, { preview: false }));
    });
  }

  /** The best chunks for a question under a token budget, in a new Markdown document. */
  async contextForQuestion(): Promise<void> {
    const query = await vscode.window.showInputBox({ title: 'raggrep: Context for a Question', prompt: 'The question to gather code for' });
    if (!query?.trim()) return;
    try {
      const result = await this.execute<{ text?: string; tokens?: number; sources?: string[] }>('raggrep.context', { query: query.trim() });
      const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: result.text ?? '' });
      await vscode.window.showTextDocument(doc, { preview: false });
      void vscode.window.showInformationMessage(`raggrep: ${result.tokens ?? 0} tokens from ${(result.sources ?? []).length} sources.`);
    } catch (err) {
      void vscode.window.showErrorMessage(`raggrep: Context failed: ${errorText(err)}`);
    }
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isSimilarArgs(value: unknown): value is { uri: string; range: Range } {
  const v = value as { uri?: unknown; range?: Range };
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.uri === 'string' &&
    typeof v.range?.start?.line === 'number' &&
    typeof v.range?.end?.line === 'number'
  );
}

/** The extension's own command for each server command a code action names (run as is, the
 * server's answer would go nowhere). */
const REROUTED: Record<string, string> = {
  [SERVER_FIND_SIMILAR]: 'raggrep.findSimilarCode',
  'raggrep.history': 'raggrep.showHistory',
};

function rerouteFindSimilar(action: vscode.Command | vscode.CodeAction): vscode.Command | vscode.CodeAction {
  if (action instanceof vscode.CodeAction) {
    const ours = action.command && REROUTED[action.command.command];
    if (action.command && ours) {
      action.command = { ...action.command, command: ours };
    }
    return action;
  }
  const ours = REROUTED[(action as vscode.Command).command];
  if (ours) {
    return { ...(action as vscode.Command), command: ours };
  }
  return action;
}

let raggrep: Raggrep | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const r = new Raggrep(context);
  raggrep = r;
  context.subscriptions.push(
    r,
    registerTeamDocuments(),
    vscode.commands.registerCommand('raggrep.semanticSearch', () => r.search()),
    vscode.commands.registerCommand('raggrep.findSimilarCode', (args?: unknown) => r.findSimilar(args)),
    vscode.commands.registerCommand('raggrep.reindexWorkspace', () => r.reindex()),
    vscode.commands.registerCommand('raggrep.showStatus', () => r.showStatus()),
    vscode.commands.registerCommand('raggrep.toggleWorkspace', () => r.toggle()),
    vscode.commands.registerCommand('raggrep.pauseIndexing', () => r.setPaused(true)),
    vscode.commands.registerCommand('raggrep.resumeIndexing', () => r.setPaused(false)),
    vscode.commands.registerCommand('raggrep.contextForQuestion', () => r.contextForQuestion()),
    vscode.commands.registerCommand('raggrep.showHistory', (args?: unknown) => r.showHistory(args)),
    vscode.commands.registerCommand('raggrep.restartServer', () => r.restart()),
    vscode.workspace.onDidChangeConfiguration((e) => void r.configurationChanged(e)),
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      // The running client tells the server itself; only start one when the first folder opens.
      if (vscode.workspace.workspaceFolders?.length && !r.running) void r.start();
    }),
  );
  void r.start();
}

export async function deactivate(): Promise<void> {
  await raggrep?.stop();
  raggrep = undefined;
}
