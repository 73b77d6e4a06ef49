/**
 * `--tools <module>`: an ES module whose `tools` export (or default export) is
 * the run's AgentTools. The path is resolved against the working directory.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AgentTools } from '../agent/types.js';
import { UsageError } from './args.js';

export async function loadToolsModule(path: string, cwd: string): Promise<{ path: string; tools: AgentTools }> {
  const abs = resolve(cwd, path);
  let isFile = false;
  try {
    isFile = statSync(abs).isFile();
  } catch {
    // reported below
  }
  if (!isFile) throw new UsageError(`--tools ${path}: no such file (an ES module exporting \`tools\`).`);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(abs).href)) as Record<string, unknown>;
  } catch (error) {
    throw new UsageError(`--tools ${path}: the module failed to load: ${error instanceof Error ? error.message : String(error)}`);
  }
  const tools = mod.tools ?? mod.default;
  if (tools === null || typeof tools !== 'object' || Array.isArray(tools)) {
    throw new UsageError(`--tools ${path}: export the tools as \`export const tools = { name: { parameters, execute } }\` or as the default export.`);
  }
  return { path: abs, tools: tools as AgentTools };
}
