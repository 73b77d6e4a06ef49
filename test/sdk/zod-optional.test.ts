/**
 * zod is a dependency the user installs, not one Cairn forces: a process that
 * runs an Agent whose tools use another validator resolves no zod module at all.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('zod stays optional', () => {
  it('an Agent run with a non-zod validator loads no zod', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-no-zod-'));
    const log = join(dir, 'modules.log');
    try {
      const out = await new Promise<string>((resolve, reject) => {
        execFile(
          process.execPath,
          ['--conditions=source', '--import', 'tsx', '--import', './test/sdk/support/module-log.mjs', 'test/sdk/support/no-zod-run.ts'],
          { env: { ...process.env, CAIRN_MODULE_LOG: log }, timeout: 60_000 },
          (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)),
        );
      });
      expect(out.trim()).toBe('completed Sunny in Oslo.');
      const modules = readFileSync(log, 'utf8').split('\n').filter(Boolean);
      // The log saw the run's own modules (so the hook worked) ...
      expect(modules.some((url) => url.endsWith('/src/sdk/tool-schema.ts'))).toBe(true);
      expect(modules.some((url) => url.endsWith('/src/agent/run-agent.ts'))).toBe(true);
      // ... and no zod, of either major version.
      expect(modules.filter((url) => /\/node_modules\/(zod|zod-v3)\//.test(url))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
