/**
 * @modelcontextprotocol/sdk is an optional peer: a run without mcp never
 * resolves it, and a run with mcp in a project without it fails before any
 * model call with mcp_unavailable, saying what to install.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanDirs, world } from './helpers.js';

afterAll(cleanDirs);

describe('without @modelcontextprotocol/sdk', () => {
  it('a run without mcp never loads it; one with mcp fails with mcp_unavailable', () => {
    const { dir } = world('no-sdk');
    const log = join(dir, 'resolved.log');
    const out = execFileSync(process.execPath, [
      '--conditions=source', '--import', 'tsx', '--import', './test/mcp/servers/hide-sdk.mjs', 'test/mcp/no-sdk-run.ts',
    ], { env: { ...process.env, HIDE_SDK_LOG: log }, encoding: 'utf8', timeout: 60_000 });
    const report = JSON.parse(out.trim().split('\n').at(-1)!) as {
      plain: string; log: string; after: string; withMcp: { status: string; code?: string; message?: string };
    };
    expect(report.plain).toBe('completed');
    expect(report.log).toBe('');
    // The hook does see a resolution of the SDK: the run with mcp made one.
    expect(report.after).toContain('@modelcontextprotocol/sdk/client/index.js');
    expect(report.withMcp).toMatchObject({ status: 'failed', code: 'mcp_unavailable' });
    expect(report.withMcp.message).toContain('npm install @modelcontextprotocol/sdk');
  });
});
