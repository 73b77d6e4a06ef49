/** What the MCP tests share: the test servers as `mcp` server configurations, effect files, a wait. */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { McpServerConfig } from '../../src/mcp/types.js';

const here = (file: string) => fileURLToPath(new URL(`./servers/${file}`, import.meta.url));

/** The SDK-written stdio server (servers/notes.mjs), its effects appended to `effects`. */
export function notesServer(effects: string, extra: Partial<McpServerConfig> & { env?: Record<string, string> } = {}): McpServerConfig {
  const { env, ...rest } = extra;
  return {
    name: 'notes',
    transport: { type: 'stdio', command: process.execPath, args: [here('notes.mjs')], env: { MCP_EFFECTS: effects, ...env } },
    ...rest,
  };
}

/** The low-level server (servers/raw.mjs) listing exactly `tools`. */
export function rawServer(name: string, tools: unknown[], extra: Partial<McpServerConfig> & { results?: Record<string, unknown> } = {}): McpServerConfig {
  const { results, ...rest } = extra;
  const env = { MCP_TOOLS: JSON.stringify(tools), MCP_RESULTS: JSON.stringify(results ?? {}) };
  return { name, transport: { type: 'stdio', command: process.execPath, args: [here('raw.mjs')], env }, ...rest };
}

/** The protocol breaker (servers/broken.mjs) in one of its modes. */
export function brokenServer(mode: string, extra: Partial<McpServerConfig> = {}): McpServerConfig {
  return { name: 'broken', transport: { type: 'stdio', command: process.execPath, args: [here('broken.mjs')], env: { MCP_BROKEN: mode } }, ...extra };
}

const dirs: string[] = [];

/** A fresh directory with an effects file path in it; removed by {@link cleanDirs}. */
export function world(name: string): { dir: string; effects: string } {
  const dir = mkdtempSync(join(tmpdir(), `cairn-mcp-${name}-`));
  dirs.push(dir);
  return { dir, effects: join(dir, 'effects.log') };
}

export function cleanDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** The effect lines a server wrote. */
export const effectLines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

/** Resolves once `predicate` holds (checked every 10 ms), or rejects after `ms`. */
export async function until(predicate: () => boolean, ms = 10_000): Promise<void> {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > ms) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}
