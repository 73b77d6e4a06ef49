/** An Agent run whose tool's validator is not zod: the process must load no zod (test/sdk/zod-optional.test.ts). */
import { Agent, tool } from 'cairn';
import { createMockModel } from 'cairn/testing';

const validator = {
  '~standard': {
    version: 1 as const,
    vendor: 'plain',
    validate: (value: unknown) => (typeof (value as { city?: unknown })?.city === 'string'
      ? { value: value as { city: string } }
      : { issues: [{ message: 'city must be a string' }] }),
  },
  toJSONSchema: () => ({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
};
const weather = tool({ name: 'weather', schema: validator, execute: () => 'sunny' });
const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'weather', args: { city: 'Oslo' } }] }, { text: 'Sunny in Oslo.' }] });
const result = await new Agent({ model, tools: [weather] }).run({ prompt: 'Weather in Oslo?' });
console.log(result.status, result.outputText);
