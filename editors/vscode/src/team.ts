// Team index hits (the `team` setting) in read-only virtual documents: the files are in other
// repositories, not on this machine, so a chosen hit shows its snippet under a header naming
// the repository and location (results.ts teamDocument builds the text).

import * as vscode from 'vscode';
import { TEAM_SCHEME, TeamHitItem } from './results';

/** Contents of the team documents opened in this window, by URI. */
class TeamDocuments implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return (
      this.contents.get(uri.toString()) ??
      'This team index result is no longer in memory (VS Code was reloaded): run raggrep: Semantic Search again.\n'
    );
  }

  /** Sets a document's text; an open one is updated (a newer search can bring a newer snippet). */
  set(uri: vscode.Uri, content: string): void {
    const key = uri.toString();
    if (this.contents.get(key) === content) return;
    this.contents.set(key, content);
    this.changed.fire(uri);
  }

  dispose(): void {
    this.changed.dispose();
  }
}

const documents = new TeamDocuments();

/** Registers the `raggrep-team:` document provider (once, from activate). */
export function registerTeamDocuments(): vscode.Disposable {
  const registration = vscode.workspace.registerTextDocumentContentProvider(TEAM_SCHEME, documents);
  return vscode.Disposable.from(registration, documents);
}

/** The virtual document's URI of a team hit: `raggrep-team:/<repo>/<path>?L12-30`. */
export function teamUri(item: TeamHitItem): vscode.Uri {
  return vscode.Uri.from({ scheme: TEAM_SCHEME, path: item.document.path, query: item.document.query });
}

/** Opens a team hit read-only, in the hit's language when VS Code knows it. */
export async function openTeamHit(item: TeamHitItem, toSide = false): Promise<void> {
  const uri = teamUri(item);
  documents.set(uri, item.document.content);
  let doc = await vscode.workspace.openTextDocument(uri);
  const language = item.document.languageId;
  if (language && doc.languageId !== language && (await vscode.languages.getLanguages()).includes(language)) {
    doc = await vscode.languages.setTextDocumentLanguage(doc, language);
  }
  await vscode.window.showTextDocument(doc, {
    preview: !toSide,
    viewColumn: toSide ? vscode.ViewColumn.Beside : undefined,
  });
}
