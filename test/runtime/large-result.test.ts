/**
 * A tool result too large to store is refused without copies of it: two
 * 50 MB results, returned at once, are measured in a child process by its
 * peak RSS (before the change, the JSON of each result was written out in
 * full before its size was known: about 2.5 times the results' own memory on
 * top of them). Both receipts say why, with the typed error, and the store
 * holds nothing of either result.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const script = join(root, 'test/support/large-result-run.ts');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const SIZE = 50_000_000;

interface Report {
  status: string;
  warnings: string[];
  before: number;
  after: number;
  fileBytes: number;
  receipts: Array<{ status: string; code?: string; name?: string; message?: string; hasRawResult: boolean }>;
}

function runChild(shape: 'string' | 'pages'): Report {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-large-result-'));
  dirs.push(dir);
  const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', script, shape, String(SIZE), dir], {
    cwd: root, encoding: 'utf8',
  });
  if (child.status !== 0) throw new Error(`the child run failed (${child.status}):\n${child.stderr}`);
  return JSON.parse(child.stdout.trim().split('\n').at(-1)!) as Report;
}

describe('two 50 MB tool results at once, over maxReceiptBytes', () => {
  for (const shape of ['string', 'pages'] as const) {
    it(`(${shape === 'string' ? 'one string each' : 'fifty 1 MB strings each'}) are refused, with peak RSS under 3x one result`, () => {
      const report = runChild(shape);
      expect(report.status).toBe('completed');
      // The run's own memory: both results (their JSON never made) and little else.
      expect(report.after - report.before).toBeLessThan(3 * SIZE);
      expect(report.receipts).toHaveLength(2);
      for (const receipt of report.receipts) {
        expect(receipt).toEqual({
          status: 'unstorable', code: 'result_too_large', name: 'ToolResultError',
          message: "its JSON is over the receipt's limit of 1048576 bytes (maxReceiptBytes)", hasRawResult: false,
        });
      }
      expect(report.warnings).toEqual(['maxReceiptBytes', 'maxReceiptBytes']);
      // Nothing of either result reached the file (a fresh store with two small runs).
      expect(report.fileBytes).toBeLessThan(1_000_000);
    }, 120_000);
  }
});
