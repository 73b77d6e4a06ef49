/**
 * The example's agent. In one step it asks for approval to publish (a server
 * tool) and asks for the reader's colour (a client tool), so the run suspends
 * on both at once; the resume finishes the answer. Without a key it runs on a
 * scripted model that streams word by word, slowly enough to reload the page
 * mid-stream.
 */
import type { AgentOptions, AgentTools, LanguageModel } from 'cairn/agent';
import type { ModelMessage, ModelRequest } from 'cairn/models';
import { createMockModel, type MockTurn } from 'cairn/testing';

export const INTRO = 'I will publish the release notes once you approve, and I need your favourite colour for the banner.';

/** The scripted answer once both calls have their results. */
export function answerFor(color: string, published: boolean): string {
  return published
    ? `The release notes are published with a ${color} banner. Thank you for approving.`
    : `The release notes stay unpublished, as you asked; the banner would have been ${color}.`;
}

const words = (text: string) => text.split(/(?= )/);

/**
 * The scripted turn for a request: the first turn of a run (no tool results
 * yet) asks for both calls; a turn that has the results answers with them.
 * Reading the request instead of counting calls lets one model serve any
 * number of runs.
 */
function scriptedTurn(request: ModelRequest): MockTurn {
  const results = request.messages.filter((m): m is Extract<ModelMessage, { role: 'tool' }> => m.role === 'tool');
  const color = results.find((m) => m.toolName === 'pickColor');
  const publish = results.find((m) => m.toolName === 'publish');
  if (!color || !publish) {
    return {
      chunks: words(INTRO),
      toolCalls: [
        { toolName: 'publish', args: { slug: 'release-notes' } },
        { toolName: 'pickColor', args: { question: 'Which colour should the banner be?' } },
      ],
    };
  }
  const text = answerFor(typeof color.content === 'string' ? color.content : JSON.stringify(color.content), publish.isError !== true);
  return { chunks: words(text) };
}

/** A scripted model whose text deltas arrive `delayMs` apart. */
export function scriptedModel(delayMs: number): LanguageModel {
  const inner = createMockModel({ modelId: 'scripted-web', responses: [scriptedTurn], strict: false });
  return {
    specificationVersion: 'cairn-model-1',
    provider: inner.provider,
    modelId: inner.modelId,
    doGenerate: (request) => inner.doGenerate(request),
    async *doStream(request) {
      for await (const part of inner.doStream!(request)) {
        if (part.type === 'text-delta') await new Promise((resolve) => setTimeout(resolve, delayMs));
        yield part;
      }
    },
  };
}

export const tools: AgentTools = {
  publish: {
    description: 'Publish a page of the site.',
    parameters: { type: 'object', properties: { slug: { type: 'string' } }, required: ['slug'] },
    needsApproval: true,
    execute: ({ slug }: { slug: string }) => `published ${slug}`,
  },
  pickColor: {
    description: 'Ask the person at the page for a colour. Runs in the browser.',
    parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
  },
};

/** The options every leg of a run shares (a resume must pass the same). */
export function agentOptions(model: LanguageModel): Omit<AgentOptions, 'session' | 'prompt'> {
  return {
    model,
    bindingId: 'web-example-v1',
    system: 'You publish release notes. Ask for approval to publish and, in the same step, ask the person for the banner colour with pickColor.',
    tools,
    maxSteps: 6,
  };
}
