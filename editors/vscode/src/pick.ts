// The QuickPick for search results: queried as you type, never re-filtered by VS Code.

import * as vscode from 'vscode';
import { HitItem, Hit, noResultsDetail, resultsToItems, searchTitle, SearchResult, TeamHitItem, teamRows, TeamSection } from './results';
import { openTeamHit } from './team';

export const DEBOUNCE_MS = 200;

/** A row leads to a local file (`target`), to a team index hit (`team`), or nowhere (messages). */
type Row = vscode.QuickPickItem & { target?: HitItem; team?: TeamHitItem };

const openToSide: vscode.QuickInputButton = {
  iconPath: new vscode.ThemeIcon('split-horizontal'),
  tooltip: 'Open to the Side',
};

function multiRoot(): boolean {
  return (vscode.workspace.workspaceFolders?.length ?? 0) > 1;
}

/** Rows from hits. `alwaysShow` keeps VS Code's own fuzzy filter from hiding any of them. */
function rows(hits: Hit[] | undefined, alwaysShow: boolean): Row[] {
  return resultsToItems(hits, { multiRoot: multiRoot() }).map((item) => ({
    label: item.label,
    description: item.description,
    detail: item.detail,
    alwaysShow,
    buttons: [openToSide],
    target: item,
  }));
}

function messageRow(label: string, detail?: string): Row {
  return { label, detail, alwaysShow: true };
}

/**
 * Rows of the team section, after the local ones: a separator naming the team index, its error
 * (a row that leads nowhere) and its hits, which open read-only documents, never files.
 */
function teamSectionRows(team: TeamSection | null | undefined): Row[] {
  return teamRows(team).map((row): Row => {
    switch (row.kind) {
      case 'separator':
        return { label: row.label, kind: vscode.QuickPickItemKind.Separator };
      case 'error':
        return messageRow(row.label, row.detail);
      case 'hit':
        return {
          label: row.item.label,
          description: row.item.description,
          detail: row.item.detail,
          alwaysShow: true,
          buttons: [openToSide],
          team: row.item,
        };
    }
  });
}

/**
 * Keeps the server's order: VS Code filters QuickPick rows against the typed text (label,
 * description, detail) and, by default, sorts rows whose label matches to the top. Rows have
 * `alwaysShow`, description/detail matching is off, and label sorting is turned off where the
 * running VS Code accepts it: `sortByLabel` is still a proposed API in the typings, but the
 * extension host of 1.100 sets it without a proposal check.
 */
function unfiltered(pick: vscode.QuickPick<Row>): void {
  pick.matchOnDescription = false;
  pick.matchOnDetail = false;
  try {
    (pick as unknown as { sortByLabel: boolean }).sortByLabel = false;
  } catch {
    // An extension host that guards the property: rows stay visible (alwaysShow), and only a
    // label that contains the whole query moves up.
  }
}

export async function openHit(item: HitItem, toSide = false): Promise<void> {
  const uri = vscode.Uri.parse(item.uri);
  const range = new vscode.Range(item.range.start.line, 0, item.range.start.line, 0);
  const editor = await vscode.window.showTextDocument(uri, {
    selection: range,
    preview: !toSide,
    viewColumn: toSide ? vscode.ViewColumn.Beside : undefined,
  });
  const full = new vscode.Range(item.range.start.line, 0, item.range.end.line, 0);
  editor.revealRange(full, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}

function wireOpen(pick: vscode.QuickPick<Row>): void {
  pick.onDidAccept(() => {
    const row = pick.selectedItems[0] ?? pick.activeItems[0];
    if (row?.target) {
      pick.hide();
      void openHit(row.target);
    } else if (row?.team) {
      pick.hide();
      void openTeamHit(row.team);
    }
  });
  pick.onDidTriggerItemButton((e) => {
    if (e.item.target) {
      void openHit(e.item.target, true);
    } else if (e.item.team) {
      void openTeamHit(e.item.team, true);
    }
  });
}

export type Search = (query: string) => Promise<SearchResult>;

export interface SearchOptions {
  /** A line for the output channel (a team index error, once per QuickPick and message). */
  log?: (line: string) => void;
}

/**
 * "raggrep: Semantic Search": a QuickPick that asks the server (`raggrep.search`) as you type,
 * debounced; the newest query wins, older answers are dropped. With the `team` setting on, the
 * team index's hits follow the local ones under their own separator.
 */
export function showSearch(search: Search, initial = '', options: SearchOptions = {}): vscode.QuickPick<Row> {
  const pick = vscode.window.createQuickPick<Row>();
  pick.title = 'raggrep: Semantic Search';
  pick.placeholder = 'Describe the code you are looking for, e.g. "where do we validate tokens"';
  unfiltered(pick);
  wireOpen(pick);
  let timer: NodeJS.Timeout | undefined;
  let generation = 0;
  let loggedTeamError: string | undefined;

  const run = async (query: string, mine: number) => {
    pick.busy = true;
    try {
      const result = await search(query);
      if (mine !== generation) return;
      const items = rows(result.results, true);
      const team = teamSectionRows(result.team);
      pick.title = searchTitle(result);
      if (team.length > 0) {
        // The separator says what follows; without a local row, say there was none.
        const none = items.length > 0 ? [] : [messageRow('$(info) No results in this workspace', noResultsDetail(result))];
        pick.items = [...items, ...none, ...team];
      } else {
        pick.items = items.length > 0 ? items : [messageRow('$(info) No results', noResultsDetail(result))];
      }
      const teamError = typeof result.team?.error === 'string' && result.team.error !== '' ? result.team.error : undefined;
      // Logged once while it lasts: the same error differs only in its numbers ("trying again in 29 s").
      const errorKey = teamError?.replace(/\d+/g, 'N');
      if (teamError && errorKey !== loggedTeamError) {
        const source = result.team?.source;
        const named = typeof source === 'string' && source !== '' && !teamError.includes(source) ? ` ${source}` : '';
        options.log?.(`the team index${named} did not answer "${query}": ${teamError}`);
      }
      loggedTeamError = errorKey;
    } catch (err) {
      if (mine !== generation) return;
      pick.title = 'raggrep: Semantic Search';
      pick.items = [messageRow('$(error) Search failed', err instanceof Error ? err.message : String(err))];
    } finally {
      if (mine === generation) pick.busy = false;
    }
  };

  const onValue = (value: string) => {
    generation += 1;
    const mine = generation;
    if (timer) clearTimeout(timer);
    const query = value.trim();
    if (query === '') {
      pick.busy = false;
      pick.title = 'raggrep: Semantic Search';
      pick.items = [];
      return;
    }
    timer = setTimeout(() => void run(query, mine), DEBOUNCE_MS);
  };
  pick.onDidChangeValue(onValue);
  pick.onDidHide(() => {
    generation += 1;
    if (timer) clearTimeout(timer);
    pick.dispose();
  });
  pick.show();
  if (initial) {
    pick.value = initial;
    onValue(initial); // whether or not the assignment fires onDidChangeValue: a second call only restarts the debounce
  }
  return pick;
}

/** A fixed list of results (Find Similar in a QuickPick). */
export function showResults(title: string, hits: Hit[] | undefined): void {
  const pick = vscode.window.createQuickPick<Row>();
  pick.title = title;
  pick.placeholder = 'Type to filter';
  const items = rows(hits, false);
  pick.items = items.length > 0 ? items : [messageRow('$(info) No similar code found')];
  pick.matchOnDescription = true;
  wireOpen(pick);
  pick.onDidHide(() => pick.dispose());
  pick.show();
}
