/**
 * The compatibility corpus: every stored record in corpus/run-v<N>/, written by
 * the engine of machine version N, is resumed to its end by the current code
 * through the public entry points, from an in-memory store and from a SQLite
 * file. What a user relies on is checked: the run completes with the expected
 * output, each effect runs the expected number of times in the resuming
 * process (an approved payment once, a reconciled or already answered call
 * never), and the store ends with a completed record at a higher revision.
 *
 * A record of a machine version newer than any this reader knows is refused
 * with CheckpointVersionError, and nothing is written.
 *
 * The fixtures are never edited (see corpus/README.md): when one stops
 * resuming, the engine or its migration chain is what needs fixing.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, type AgentResult, type AgentRunEnvelope, type AgentRunStore, type ResumeOptions } from 'cairn/agent';
import type { MockResponse } from 'cairn/testing';
import { corpusAgent, createEffects, WRITTEN_AT, type Effects } from './corpus-agent.js';
import { corpusFiles, corpusFolders, corpusStores, readCorpusFile } from './corpus-stores.js';

/** Resumes happen a day after the records were written. */
const RESUMED_AT = WRITTEN_AT + 86_400_000;

interface Fixture {
  version: string;
  name: string;
  envelope: AgentRunEnvelope;
}

function loadCorpus(): Fixture[] {
  const fixtures: Fixture[] = [];
  for (const version of corpusFolders(/^run-v\d+$/)) {
    for (const file of corpusFiles(version)) {
      const envelope = readCorpusFile(version, file) as AgentRunEnvelope;
      fixtures.push({ version, name: file.slice(0, -'.json'.length), envelope });
    }
  }
  return fixtures;
}

type Answers = Pick<ResumeOptions, 'approvalResponses' | 'clientToolResults' | 'retryToolCallIds' | 'reconciledToolResults' | 'retryFailed'>;

/** How a user finishes one stored run, and what they then expect. */
interface Plan {
  title: string;
  /** What the resume sends, read from the stored record where a user would read it (its pending approvals). */
  answers(envelope: AgentRunEnvelope): Answers;
  /** The model turns the resume needs; the mock is strict, so any other call fails the test. */
  responses: MockResponse[];
  output: string;
  /** Effects the resuming process must run, by tool. */
  effects: Effects['byTool'];
  /** The answer each call id has in the final conversation (each exactly once). */
  toolAnswers: Record<string, unknown>;
  /** A run that had ended: the resume writes nothing. */
  ended?: boolean;
}

const NONE = { pay: 0, ship: 0, lookup: 0 };
const LOOKED_UP = { orderId: '7', status: 'packed' };
const PAID = { paid: true, orderId: '7', amountCents: 4200 };
const SHIPPED = { shipped: true, orderId: '7' };
const approveAll = (envelope: AgentRunEnvelope): Answers => ({
  approvalResponses: envelope.pendingApprovals.map(({ approvalId, token }) => ({ approvalId, token, approved: true })),
});

const PLANS: Record<string, Plan[]> = {
  'suspended-approval': [{
    title: 'approved with the stored approvalId and token: the payment runs once',
    answers: approveAll,
    responses: [{ text: 'Order 7 is paid.' }],
    output: 'Order 7 is paid.',
    effects: { ...NONE, pay: 1 },
    toolAnswers: { 'lookup-1': LOOKED_UP, 'pay-1': PAID },
  }],
  'suspended-client-call': [{
    title: 'the client answers its call',
    answers: () => ({ clientToolResults: [{ toolCallId: 'ask-1', output: 'Yes, gift wrap it.' }] }),
    responses: [{ text: 'Order 7 will be gift wrapped.' }],
    output: 'Order 7 will be gift wrapped.',
    effects: NONE,
    toolAnswers: { 'ask-1': 'Yes, gift wrap it.' },
  }],
  'suspended-approval-and-client-call': [{
    title: 'the approval and the client answer in one resume: the payment runs once',
    answers: (envelope) => ({ ...approveAll(envelope), clientToolResults: [{ toolCallId: 'ask-1', output: 'No wrapping.' }] }),
    responses: [{ text: 'Order 7 is paid, not wrapped.' }],
    output: 'Order 7 is paid, not wrapped.',
    effects: { ...NONE, pay: 1 },
    toolAnswers: { 'pay-1': PAID, 'ask-1': 'No wrapping.' },
  }],
  'unknown-effect': [
    {
      title: 'reconciled with what the carrier says: ship never runs again',
      answers: () => ({ reconciledToolResults: [{ toolCallId: 'ship-1', output: SHIPPED }] }),
      responses: [{ text: 'Order 7 has shipped.' }],
      output: 'Order 7 has shipped.',
      effects: NONE,
      toolAnswers: { 'ship-1': SHIPPED },
    },
    {
      title: 'retried: ship runs once more, under the same identity',
      answers: () => ({ retryToolCallIds: ['ship-1'] }),
      responses: [{ text: 'Order 7 has shipped.' }],
      output: 'Order 7 has shipped.',
      effects: { ...NONE, ship: 1 },
      toolAnswers: { 'ship-1': SHIPPED },
    },
  ],
  'unknown-effect-approved': [
    {
      title: 'retried: the payment passes its gate with the recorded verdict and runs once',
      answers: () => ({ retryToolCallIds: ['pay-1'] }),
      responses: [{ text: 'Order 7 is paid.' }],
      output: 'Order 7 is paid.',
      effects: { ...NONE, pay: 1 },
      toolAnswers: { 'pay-1': PAID },
    },
    {
      title: 'reconciled with what the payment system says: the payment never runs again',
      answers: () => ({ reconciledToolResults: [{ toolCallId: 'pay-1', output: PAID }] }),
      responses: [{ text: 'Order 7 is paid.' }],
      output: 'Order 7 is paid.',
      effects: NONE,
      toolAnswers: { 'pay-1': PAID },
    },
  ],
  'failed-transient': [{
    title: 'retryFailed goes on from the last checkpoint: the answered lookup does not run again',
    answers: () => ({ retryFailed: true }),
    responses: [{ text: 'Order 7 is packed.' }],
    output: 'Order 7 is packed.',
    effects: NONE,
    toolAnswers: { 'lookup-1': LOOKED_UP },
  }],
  drained: [{
    title: 'a plain resume goes on after the drain: ship does not run again',
    answers: () => ({}),
    responses: [{ text: 'Order 7 has shipped.' }],
    output: 'Order 7 has shipped.',
    effects: NONE,
    toolAnswers: { 'ship-1': SHIPPED },
  }],
  completed: [{
    title: 'answers with its stored result, without a model call or an effect',
    answers: () => ({}),
    responses: [],
    output: 'Order 7 is packed.',
    effects: NONE,
    toolAnswers: { 'lookup-1': LOOKED_UP },
    ended: true,
  }],
};

const STORES = corpusStores('cairn-corpus-');

/** The corpus agent of a resuming process, a day later; with no responses, its strict model takes no call. */
function resumingAgent(envelope: AgentRunEnvelope, store: AgentRunStore, effects: Effects, responses: MockResponse[] = []) {
  return corpusAgent({ effects, runId: envelope.runId, store, responses, now: RESUMED_AT, idPrefix: 'resume' });
}

function resumeOptions(envelope: AgentRunEnvelope, store: AgentRunStore, plan: Plan, effects: Effects) {
  return { ...resumingAgent(envelope, store, effects, plan.responses), ...plan.answers(envelope) };
}

/** A failed result's error, for the message of a status check. */
const why = (result: AgentResult) => JSON.stringify(result.status === 'failed' ? result.error : result.status);

/** Each call's answer in the conversation; a call answered twice fails here. */
function toolAnswers(result: AgentResult): Record<string, unknown> {
  const answers: Record<string, unknown> = {};
  for (const message of result.messages) {
    if (message.role !== 'tool') continue;
    expect(answers, `call ${message.toolCallId} answered twice`).not.toHaveProperty([message.toolCallId]);
    answers[message.toolCallId] = message.content;
  }
  return answers;
}

const fixtures = loadCorpus();

describe('the compatibility corpus', () => {
  it('holds every case of every machine version, and a plan for each', () => {
    for (const version of ['run-v1', 'run-v2']) {
      const names = fixtures.filter((f) => f.version === version).map((f) => f.name).sort();
      expect(names, version).toEqual(Object.keys(PLANS).sort());
    }
    for (const fixture of fixtures) {
      expect(PLANS[fixture.name], `no resume plan for ${fixture.version}/${fixture.name}`).toBeDefined();
      expect(fixture.envelope.machine.version).toBe(Number(fixture.version.slice('run-v'.length)));
    }
  });

  for (const fixture of fixtures) {
    describe(`${fixture.version}/${fixture.name} (stored ${fixture.envelope.status})`, () => {
      for (const kind of STORES) {
        for (const plan of PLANS[fixture.name] ?? []) {
          it(`${kind.name}: ${plan.title}`, async () => {
            const store = await kind.open(fixture.envelope);
            const effects = createEffects();
            const options = resumeOptions(fixture.envelope, store, plan, effects);

            const result = await resumeAgent(options);

            expect(result.status, why(result)).toBe('completed');
            if (result.status !== 'completed') return;
            expect(result.output).toBe(plan.output);
            expect(effects.byTool).toEqual(plan.effects);
            expect(toolAnswers(result)).toEqual(plan.toolAnswers);
            options.model.assertAllUsed();

            const stored = await store.load(fixture.envelope.runId);
            expect(stored?.status).toBe('completed');
            if (plan.ended) expect(stored).toEqual(fixture.envelope);
            else expect(stored!.revision).toBeGreaterThan(fixture.envelope.revision);

            // The run has ended: the same resume again returns the stored result and runs nothing.
            const revision = stored!.revision;
            const again = await resumeAgent(resumeOptions(fixture.envelope, store, { ...plan, responses: [] }, effects));
            expect(again.status).toBe('completed');
            if (again.status === 'completed') expect(again.output).toBe(plan.output);
            expect(effects.byTool).toEqual(plan.effects);
            expect((await store.load(fixture.envelope.runId))?.revision).toBe(revision);
          });
        }

        if (fixture.envelope.status === 'running' && fixture.name.startsWith('unknown-effect')) {
          it(`${kind.name}: a resume that settles nothing stops for reconciliation, lists the call, and writes nothing`, async () => {
            const store = await kind.open(fixture.envelope);
            const effects = createEffects();
            const result = await resumeAgent(resumingAgent(fixture.envelope, store, effects));
            expect(result.status, why(result)).toBe('stopped');
            if (result.status !== 'stopped') return;
            expect(result.reason).toBe('tool-reconciliation-required');
            const interrupted = Object.values(fixture.envelope.receipts).filter((r) => r.status === 'executing');
            expect(result.unknownEffects?.map((e) => e.toolCallId)).toEqual(interrupted.map((r) => r.toolCallId));
            if (fixture.name === 'unknown-effect-approved') {
              // The verdict the old engine recorded is still there: a retry needs nothing more.
              expect(result.unknownEffects?.[0]?.approval?.approved).toBe(true);
            }
            expect(effects.byTool).toEqual(NONE);
            expect(await store.load(fixture.envelope.runId)).toEqual(fixture.envelope);
          });
        }

        if (fixture.envelope.status === 'suspended') {
          it(`${kind.name}: a resume without answers still waits for the same approvals and client calls`, async () => {
            const store = await kind.open(fixture.envelope);
            const effects = createEffects();
            const result = await resumeAgent(resumingAgent(fixture.envelope, store, effects));
            expect(result.status, why(result)).toBe('suspended');
            if (result.status !== 'suspended') return;
            // The same approvalId and token: a person's verdict given on the old request still applies.
            expect(result.pendingApprovals).toEqual(fixture.envelope.pendingApprovals);
            expect(result.pendingClientCalls).toEqual(fixture.envelope.pendingClientCalls);
            expect(effects.byTool).toEqual(NONE);
          });
        }

        it(`${kind.name}: the same record from a future machine version (99) is refused and nothing is written`, async () => {
          const future: AgentRunEnvelope = { ...structuredClone(fixture.envelope), machine: { ...fixture.envelope.machine, version: 99 } };
          const store = await kind.open(future);
          const effects = createEffects();
          const plan = PLANS[fixture.name]![0]!;
          const options = resumeOptions(future, store, plan, effects);

          const result = await resumeAgent(options);

          expect(result.status).toBe('failed');
          if (result.status === 'failed') {
            expect(result.error).toMatchObject({ name: 'CheckpointVersionError', code: 'checkpoint_version_unsupported' });
          }
          expect(options.model.calls).toHaveLength(0);
          expect(effects.byTool).toEqual(NONE);
          expect(await store.load(future.runId)).toEqual(future);
        });
      }
    });
  }
});
