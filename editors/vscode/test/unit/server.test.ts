// Unit tests of finding the server binary (src/server.ts).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { binaryNames, expandHome, findServer, isExecutableFile } from '../../src/server';

const only = (...files: string[]) => (f: string) => files.includes(f);

test('the setting wins', () => {
  const found = findServer({
    configured: '/opt/raggrep/bin/raggrep',
    extensionPath: '/ext',
    env: { PATH: '/usr/bin' },
    platform: 'linux',
    isExecutable: only('/opt/raggrep/bin/raggrep', '/ext/bin/raggrep', '/usr/bin/raggrep'),
  });
  assert.deepEqual(found, { ok: true, path: '/opt/raggrep/bin/raggrep', source: 'setting' });
});

test('a setting that points nowhere is an error with a fix, not a silent fallback', () => {
  const found = findServer({
    configured: '~/src/raggrep/target/release/raggrep',
    extensionPath: '/ext',
    env: { PATH: '/usr/bin' },
    platform: 'linux',
    homedir: '/home/me',
    isExecutable: only('/usr/bin/raggrep'),
  });
  assert.equal(found.ok, false);
  if (!found.ok) {
    assert.match(found.message, /raggrep\.server\.path.*not an executable/);
    assert.match(found.fix, /raggrep\.server\.path/);
  }
});

test('~ in the setting is the home directory', () => {
  const found = findServer({
    configured: '~/bin/raggrep',
    extensionPath: '/ext',
    env: {},
    platform: 'linux',
    homedir: '/home/me',
    isExecutable: only('/home/me/bin/raggrep'),
  });
  assert.deepEqual(found, { ok: true, path: '/home/me/bin/raggrep', source: 'setting' });
  assert.equal(expandHome('~', '/h'), '/h');
  assert.equal(expandHome('/abs/~x', '/h'), '/abs/~x');
});

test('then the binary shipped in the extension, then PATH', () => {
  const bundled = findServer({
    extensionPath: '/ext',
    env: { PATH: '/usr/local/bin:/usr/bin' },
    platform: 'linux',
    isExecutable: only('/ext/bin/raggrep', '/usr/bin/raggrep'),
  });
  assert.deepEqual(bundled, { ok: true, path: '/ext/bin/raggrep', source: 'bundled' });
  const onPath = findServer({
    configured: '  ',
    extensionPath: '/ext',
    env: { PATH: '/usr/local/bin::/usr/bin' },
    platform: 'linux',
    isExecutable: only('/usr/bin/raggrep'),
  });
  assert.deepEqual(onPath, { ok: true, path: '/usr/bin/raggrep', source: 'path' });
});

test('nothing found: a message naming all three places and how to fix it', () => {
  const found = findServer({ extensionPath: '/ext', env: { PATH: '/usr/bin' }, platform: 'linux', isExecutable: () => false });
  assert.equal(found.ok, false);
  if (!found.ok) {
    assert.match(found.message, /not found/);
    assert.match(found.fix, /cargo build --release/);
    assert.match(found.fix, /raggrep\.server\.path/);
  }
});

test('Windows: PATHEXT names and ; separated PATH', () => {
  assert.deepEqual(binaryNames('win32', { PATHEXT: '.COM;.EXE' }), ['raggrep.com', 'raggrep.exe']);
  const found = findServer({
    extensionPath: 'C:\\ext',
    env: { Path: 'C:\\tools;C:\\bin', PATHEXT: '.EXE' },
    platform: 'win32',
    isExecutable: only('C:\\bin\\raggrep.exe'),
  });
  assert.deepEqual(found, { ok: true, path: 'C:\\bin\\raggrep.exe', source: 'path' });
});

test('isExecutableFile: files with the execute bit only', { skip: process.platform === 'win32' }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'raggrep-vscode-'));
  try {
    const exe = path.join(dir, 'raggrep');
    const plain = path.join(dir, 'plain');
    fs.writeFileSync(exe, '#!/bin/sh\n', { mode: 0o755 });
    fs.writeFileSync(plain, '', { mode: 0o644 });
    assert.equal(isExecutableFile(exe), true);
    assert.equal(isExecutableFile(plain), false);
    assert.equal(isExecutableFile(dir), false);
    assert.equal(isExecutableFile(path.join(dir, 'missing')), false);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
