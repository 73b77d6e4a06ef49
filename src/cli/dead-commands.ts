/**
 * `cairn runs --dead` and `cairn requeue`: the jobs workers gave up on, as a
 * person inspects them, and putting them back on the queue. They show ids,
 * codes and reasons, never a job's prompt or answers.
 */
import { createWorkQueue } from '../worker/index.js';
import { atMost, checkId, flag, parse, positiveInt, str, UsageError, type OptionSpecs } from './args.js';
import { printJson, type Io } from './context.js';
import { postgresStore } from './worker-command.js';

export const DEAD_HELP = `Usage: cairn runs --dead --store <postgres-url> [options]

Lists the jobs workers gave up on (dead letters), newest first, with the
reason: a malformed payload, an unknown agent, a refusal, or too many attempts.
Put one back with cairn requeue <jobId|runId>.

Options:
  --store <url>        postgres://... : the database of the work queue
  --schema <name>      the queue's schema (default cairn_worker)
  --run <runId>        only the dead letters of this run
  --limit <n>          at most n (default 100, at most 1000)
  --json               print the list as JSON
  -h, --help           show this help
`;

export const REQUEUE_HELP = `Usage: cairn requeue <jobId|runId> --store <postgres-url> [options]

Puts a dead-lettered job back on the work queue with a fresh count of
attempts: the job with that id, or else every dead letter of the run with that
id. Fix what the reason says first (deploy the agent, fix the producer).

Options:
  --store <url>        postgres://... : the database of the work queue
  --schema <name>      the queue's schema (default cairn_worker)
  --json               print what was requeued as JSON
  -h, --help           show this help
`;

const DEAD_OPTIONS = {
  dead: { type: 'boolean' },
  store: { type: 'string' },
  schema: { type: 'string' },
  run: { type: 'string' },
  limit: { type: 'string' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

const REQUEUE_OPTIONS = { store: { type: 'string' }, schema: { type: 'string' }, json: { type: 'boolean' } } as const satisfies OptionSpecs;

const queueOf = (url: string, schema: string | undefined) =>
  createWorkQueue({ connectionString: url, ...(schema !== undefined ? { schema } : {}), log: () => undefined });

const pad = (text: string, width: number) => text.padEnd(width);

export async function deadRunsCommand(argv: string[], io: Io): Promise<number> {
  const parsed = parse(argv, DEAD_OPTIONS);
  if (flag(parsed, 'help')) {
    io.stdout.write(DEAD_HELP);
    return 0;
  }
  atMost(parsed, 0, 'runs');
  const url = postgresStore(str(parsed, 'store'), 'runs --dead');
  const limit = positiveInt('limit', str(parsed, 'limit'), 1000);
  const runId = str(parsed, 'run');
  if (runId !== undefined) checkId('--run', runId);
  const queue = queueOf(url, str(parsed, 'schema'));
  try {
    const dead = await queue.listDeadJobs({ ...(runId !== undefined ? { runId } : {}), ...(limit !== undefined ? { limit } : {}) });
    if (flag(parsed, 'json')) {
      printJson(io, { dead });
      return 0;
    }
    if (dead.length === 0) {
      io.stdout.write('No dead jobs.\n');
      return 0;
    }
    const idWidth = Math.max(6, ...dead.map((d) => d.jobId.length));
    const runWidth = Math.max(6, ...dead.map((d) => (d.runId ?? '-').length));
    io.stdout.write(`${pad('JOB ID', idWidth)}  ${pad('RUN ID', runWidth)}  ${pad('CODE', 20)}  ATTEMPTS  DEAD AT                   REASON\n`);
    for (const d of dead) {
      io.stdout.write(`${pad(d.jobId, idWidth)}  ${pad(d.runId ?? '-', runWidth)}  ${pad(d.code, 20)}  ${pad(String(d.attempts), 8)}  ${new Date(d.deadAt).toISOString()}  ${d.reason}\n`);
    }
    return 0;
  } finally {
    await queue.close();
  }
}

export async function requeueCommand(argv: string[], io: Io): Promise<number> {
  const parsed = parse(argv, REQUEUE_OPTIONS);
  if (flag(parsed, 'help')) {
    io.stdout.write(REQUEUE_HELP);
    return 0;
  }
  atMost(parsed, 1, 'requeue');
  const id = parsed.positionals[0];
  if (id === undefined) throw new UsageError('cairn requeue needs a dead job\'s id or a run id: cairn requeue <jobId|runId>.');
  checkId('The job or run id', id);
  const url = postgresStore(str(parsed, 'store'), 'requeue');
  const queue = queueOf(url, str(parsed, 'schema'));
  try {
    const { requeued } = await queue.requeue(id);
    if (flag(parsed, 'json')) printJson(io, { requeued });
    else if (requeued.length === 0) io.stdout.write(`No dead job or run ${id}; see cairn runs --dead.\n`);
    else for (const r of requeued) io.stdout.write(`requeued dead job ${r.deadJobId} as job ${r.jobId}\n`);
    return requeued.length === 0 ? 1 : 0;
  } finally {
    await queue.close();
  }
}
