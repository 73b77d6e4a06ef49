/**
 * The wire on the SQLite ops store: the run and its journal in one file, and a
 * second store object on the file (another server) serving the replay.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resumeStreamAgent, streamAgent } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { agentStateFromParts, resumeAgentStreamResponse, toAgentStreamResponse } from 'cairn/ui';
import { agentOptions, readAll, suspendingModel } from './helpers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the UI wire on a SQLite ops store', () => {
  it('journals both legs in the file, and another store object on it replays them, following the live one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-ui-sqlite-'));
    dirs.push(dir);
    const path = join(dir, 'ops.sqlite');
    const server1 = createSqliteOpsStore({ path });
    const server2 = createSqliteOpsStore({ path });
    try {
      const model = suspendingModel({ delayMs: 150 });
      const session = { store: server1.agentRuns, runId: 'sq-1', scope: 't' };
      const first = await readAll(toAgentStreamResponse(streamAgent({ ...agentOptions(model), session }), { runId: 'sq-1', store: server1.journal, scope: 't' }));
      const suspended = agentStateFromParts(undefined, first.map((f) => f.data));
      const approval = suspended.pendingApprovals[0]!;
      const live = toAgentStreamResponse(resumeStreamAgent({
        ...agentOptions(model), session,
        approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
        clientToolResults: [{ toolCallId: 'call-color', output: 'teal' }],
      }), { runId: 'sq-1', store: server1.journal, scope: 't' });
      await new Promise((resolve) => setTimeout(resolve, 40));
      // The client reconnects to the other server, from the third frame.
      const replay = await readAll(await resumeAgentStreamResponse({ store: server2.journal, streamId: 'sq-1', scope: 't', cursor: 3, pollIntervalMs: 20 }));
      const direct = await readAll(live);
      expect(replay.map((f) => f.data)).toEqual([...first.slice(3), ...direct].map((f) => f.data));
      expect(agentStateFromParts(suspended, replay.map((f) => f.data))).toMatchObject({ status: 'completed', output: 'Published, in teal.' });
      expect(await server2.journal.head('sq-1')).toMatchObject({ seq: first.length + direct.length, ended: true, scope: 't' });
    } finally {
      server1.close();
      server2.close();
    }
  });
});
