/** Shared pieces of the UI wire tests: an SSE reader and a run that suspends on an approval and a client call together. */
import type { AgentOptions, AgentTools, LanguageModel } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

export interface ReadFrame {
  id: string | undefined;
  data: any;
}

/** Every event of an SSE body, in order, with its id. */
export function parseSse(text: string): ReadFrame[] {
  const frames: ReadFrame[] = [];
  for (const block of text.split('\n\n')) {
    if (block.trim() === '') continue;
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    frames.push({ id, data: JSON.parse(data.join('\n')) });
  }
  return frames;
}

export async function readAll(response: Response): Promise<ReadFrame[]> {
  return parseSse(await response.text());
}

export const tools: AgentTools = {
  publish: {
    description: 'Publish a page.',
    parameters: { type: 'object', properties: { slug: { type: 'string' } }, required: ['slug'] },
    needsApproval: true,
    execute: ({ slug }: { slug: string }) => `published ${slug}`,
  },
  pickColor: {
    description: 'Asks the person at the page for a colour (runs in the browser).',
    parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
  },
};

/** Step 0 asks for the approval and the client call together; step 1 answers. */
export function suspendingModel(options: { delayMs?: number } = {}): LanguageModel {
  return createMockModel({
    strict: false,
    responses: [
      {
        text: 'Asking both.',
        toolCalls: [
          { toolName: 'publish', args: { slug: 'notes' }, toolCallId: 'call-publish' },
          { toolName: 'pickColor', args: { question: 'Which colour?' }, toolCallId: 'call-color' },
        ],
      },
      { text: 'Published, in teal.', ...(options.delayMs ? { delayMs: options.delayMs } : {}) },
    ],
  });
}

export function agentOptions(model: LanguageModel): Omit<AgentOptions, 'session' | 'prompt'> & { prompt: string } {
  return { model, prompt: 'Publish the notes.', tools, bindingId: 'ui-test-v1' };
}
