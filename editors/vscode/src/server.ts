// Finding the raggrep binary: the `raggrep.server.path` setting, else a binary shipped in the
// extension (`bin/raggrep`), else `raggrep` on PATH. No `vscode` import: unit-tested.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export type ServerSource = 'setting' | 'bundled' | 'path';

export type FoundServer =
  | { ok: true; path: string; source: ServerSource }
  | { ok: false; message: string; fix: string };

export interface FindOptions {
  /** The `raggrep.server.path` setting ('' or undefined: not set). */
  configured?: string;
  /** The extension's install directory (holds `bin/raggrep` in a platform package). */
  extensionPath: string;
  env: Record<string, string | undefined>;
  platform?: NodeJS.Platform;
  homedir?: string;
  /** Injected for tests; default: a regular file with an execute bit (any file on Windows). */
  isExecutable?: (file: string) => boolean;
}

export function isExecutableFile(file: string): boolean {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile()) return false;
    if (process.platform === 'win32') return true;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `~` and `~/…` → the home directory; other paths unchanged. */
export function expandHome(file: string, homedir: string): string {
  if (file === '~') return homedir;
  if (file.startsWith('~/') || file.startsWith('~\\')) return path.join(homedir, file.slice(2));
  return file;
}

/** The binary's file names on a platform. */
export function binaryNames(platform: NodeJS.Platform, env: Record<string, string | undefined>): string[] {
  if (platform !== 'win32') return ['raggrep'];
  const exts = (env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';').filter(Boolean);
  return exts.map((e) => `raggrep${e.toLowerCase()}`);
}

export function findServer(options: FindOptions): FoundServer {
  const platform = options.platform ?? process.platform;
  const isExecutable = options.isExecutable ?? isExecutableFile;
  const homedir = options.homedir ?? os.homedir();
  const pathApi = platform === 'win32' ? path.win32 : path.posix;

  const configured = (options.configured ?? '').trim();
  if (configured !== '') {
    const file = expandHome(configured, homedir);
    if (isExecutable(file)) return { ok: true, path: file, source: 'setting' };
    return {
      ok: false,
      message: `raggrep.server.path is set to "${configured}", which is not an executable file.`,
      fix: 'Point raggrep.server.path at the raggrep binary (e.g. target/release/raggrep of your raggrep checkout), or clear it to use raggrep from PATH.',
    };
  }

  const names = binaryNames(platform, options.env);
  for (const name of names) {
    const bundled = pathApi.join(options.extensionPath, 'bin', name);
    if (isExecutable(bundled)) return { ok: true, path: bundled, source: 'bundled' };
  }

  const separator = platform === 'win32' ? ';' : ':';
  const dirs = (options.env.PATH ?? options.env.Path ?? '').split(separator).filter(Boolean);
  for (const dir of dirs) {
    for (const name of names) {
      const candidate = pathApi.join(dir, name);
      if (isExecutable(candidate)) return { ok: true, path: candidate, source: 'path' };
    }
  }

  return {
    ok: false,
    message: 'the raggrep language server was not found (no raggrep.server.path, no binary in the extension, no raggrep on PATH).',
    fix: 'Build it with `cargo build --release` in the raggrep checkout, then set raggrep.server.path to target/release/raggrep (or put raggrep on your PATH).',
  };
}
