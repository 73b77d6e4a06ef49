/**
 * Test doubles for swarms: a model that plays a task's part from its prompt
 * (so any process, fresh after a crash, answers the same), and a counted
 * external effect keyed by call identity.
 */
import type { LanguageModel, ModelRequest, ModelResponse } from 'cairn/models';

export interface PlannedCall { toolName: string; args: Record<string, unknown> }

/**
 * Turn 1 makes the calls `plan(prompt)` gives (if any), turn 2 answers
 * `done: <prompt>`. The prompt is the first user message.
 */
export function planModel(plan: (prompt: string) => PlannedCall[], modelId = 'swarm-mock'): LanguageModel & { calls: number } {
  const model = {
    specificationVersion: 'cairn-model-1' as const,
    provider: 'mock',
    modelId,
    calls: 0,
    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      model.calls += 1;
      const user = request.messages.find((m) => m.role === 'user');
      const prompt = typeof user?.content === 'string' ? user.content : '';
      const turns = request.messages.filter((m) => m.role === 'assistant').length;
      const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
      const calls = plan(prompt);
      if (turns === 0 && calls.length > 0) {
        return {
          text: '', finishReason: 'tool-calls', usage,
          toolCalls: calls.map((c, i) => ({ toolCallId: `call-${i}`, toolName: c.toolName, args: c.args as never })),
        };
      }
      return { text: `done: ${prompt}`, toolCalls: [], finishReason: 'stop', usage };
    },
  };
  return model;
}

/** An effect outside every store, counted by the task that made it. */
export function effectLedger() {
  const counts = new Map<string, number>();
  return {
    counts,
    record(task: string) {
      counts.set(task, (counts.get(task) ?? 0) + 1);
    },
  };
}
