/**
 * `cairn demo`: a scripted, keyless agent that checks a build, asks to deploy
 * it, and stops for a human's approval. The deploy's effect appends a line to
 * a log beside the store, so a user can see that it ran, and ran once.
 */
import { appendFileSync } from 'node:fs';
import type { AgentTools } from '../agent/types.js';
import { scriptedModel } from './scripted-model.js';

export const DEMO_PROMPT = 'Check the build of the web service, then deploy it to production.';
export const DEMO_LOG_NAME = 'demo-deploys.log';

export const demoModel = () => scriptedModel({
  modelId: 'cairn-demo',
  turns: [
    { text: 'Checking the build first.', toolCalls: [{ toolName: 'check_build', args: { service: 'web' } }] },
    { text: 'The build is green; deploying.', toolCalls: [{ toolName: 'deploy', args: { service: 'web', env: 'production' } }] },
    { text: 'Deployed web to production.' },
  ],
}, 'the demo model');

/** The demo's tools; `log` is the file each deploy appends a line to. */
export function demoTools(log: string, runId: string): AgentTools {
  return {
    check_build: {
      description: 'Report the status of the latest build of a service.',
      parameters: { type: 'object', properties: { service: { type: 'string' } }, required: ['service'] },
      replay: 'idempotent',
      execute: ({ service }: { service: string }) => ({ service, build: 'green', tests: 'passed' }),
    },
    deploy: {
      description: 'Deploy a service to an environment.',
      parameters: {
        type: 'object',
        properties: { service: { type: 'string' }, env: { type: 'string' } },
        required: ['service', 'env'],
      },
      needsApproval: true,
      execute: ({ service, env }: { service: string; env: string }) => {
        appendFileSync(log, `${new Date().toISOString()} deployed ${service} to ${env} (run ${runId})\n`);
        return { deployed: service, env };
      },
    },
  };
}
