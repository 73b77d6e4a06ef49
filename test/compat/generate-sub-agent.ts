/**
 * Writes corpus/sub-agent-v3/: a lead suspended on its sub-agent's approval
 * (root.json) and the suspended child (child.json), as the in-memory store
 * held them. Run once, on the commit the folder's README line names:
 *   npx tsx --conditions=source test/compat/generate-sub-agent.ts
 * It refuses to write into a folder that exists.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createInMemoryAgentRunStore } from 'cairn/agent';
import { FIRST_LEG, SUB_AGENT_ROOT_ID, SUB_AGENT_SCOPE, subAgentAgents } from './sub-agent-agent.js';

const folder = fileURLToPath(new URL('./corpus/sub-agent-v3/', import.meta.url));
if (existsSync(folder)) throw new Error(`${folder} exists: corpus files are never written again.`);
const store = createInMemoryAgentRunStore();
const result = await subAgentAgents(FIRST_LEG, []).run({ prompt: 'Explain tides.', store, runId: SUB_AGENT_ROOT_ID, scope: SUB_AGENT_SCOPE });
if (result.status !== 'suspended') throw new Error(`the lead ended ${result.status}`);
const root = (await store.load(SUB_AGENT_ROOT_ID, { scope: SUB_AGENT_SCOPE }))!;
const child = (await store.load(root.pendingApprovals[0]!.runId!, { scope: SUB_AGENT_SCOPE }))!;
mkdirSync(folder, { recursive: true });
writeFileSync(`${folder}root.json`, `${JSON.stringify(root, null, 2)}\n`);
writeFileSync(`${folder}child.json`, `${JSON.stringify(child, null, 2)}\n`);
console.log(`wrote ${folder}root.json and child.json`);
