import type { ModelRequest } from '../../src/models/types.js';
import type { MockTurn } from 'cairn/testing';

/**
 * A charge-and-ship script for crash tests: the model decides from the
 * conversation (how many tool answers it holds), so a resumed run meets the
 * same script wherever it restarts. The second turn reuses the id `c1`.
 */
export function orderScript(request: ModelRequest): MockTurn {
  const toolMessages = request.messages.filter((m) => m.role === 'tool').length;
  if (toolMessages === 0) {
    return { toolCalls: [
      { toolName: 'charge', args: { order: 7 }, toolCallId: 'c1' },
      { toolName: 'note', args: { text: 'charged' }, toolCallId: 'c2' },
    ] };
  }
  if (toolMessages === 2) return { toolCalls: [{ toolName: 'ship', args: { order: 7 }, toolCallId: 'c1' }] };
  return { text: 'Order 7 charged and shipped.' };
}
