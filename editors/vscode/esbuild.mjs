// Bundles the extension (dist/extension.js) or, with --tests, the unit tests (out/test/*.test.js).
//   node esbuild.mjs [--production] [--tests]
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';

const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests');

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18', // the Node.js of VS Code 1.82, the oldest supported
  logLevel: 'warning',
};

if (tests) {
  const entryPoints = readdirSync('test/unit')
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => `test/unit/${f}`);
  await esbuild.build({ ...common, entryPoints, outdir: 'out/test', sourcemap: 'inline' });
} else {
  await esbuild.build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    external: ['vscode'],
    minify: production,
    sourcemap: !production,
  });
}
