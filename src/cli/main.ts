/**
 * The `cairn` command: dispatches to a command and turns every way it can go
 * wrong into an exit code from HEADLESS_EXIT_CODES. `bin/cairn.js` calls
 * `main(process.argv.slice(2))` and exits with what it returns.
 */
import { readFileSync } from 'node:fs';
import { redactSecrets } from '../errors/index.js';
import { HEADLESS_EXIT_CODES } from '../headless/index.js';
import { UsageError } from './args.js';
import { backupCommand } from './backup-command.js';
import { chartCommand } from './chart-command.js';
import { checkCommand } from './check-command.js';
import type { Io } from './context.js';
import { doctorCommand } from './doctor-command.js';
import { MAIN_HELP } from './help.js';
import { inspectCommand, runsCommand } from './read-commands.js';
import { resumeCommand } from './resume-command.js';
import { demoCommand, runCommand } from './run-command.js';
import { deadRunsCommand, requeueCommand } from './dead-commands.js';
import { workerCommand } from './worker-command.js';

type Command = (argv: string[], io: Io) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  demo: demoCommand,
  run: runCommand,
  resume: resumeCommand,
  inspect: inspectCommand,
  chart: chartCommand,
  // `runs --dead` lists the work queue's dead letters (PostgreSQL), not the SQLite store's runs.
  runs: (argv, io) => (argv.includes('--dead') ? deadRunsCommand(argv, io) : runsCommand(argv, io)),
  backup: backupCommand,
  doctor: doctorCommand,
  check: checkCommand,
  worker: workerCommand,
  requeue: requeueCommand,
};

/** The package's version, from the package.json above this file (src/cli or dist/src/cli). */
function version(): string {
  for (let up = new URL('../../package.json', import.meta.url), i = 0; i < 3; i++, up = new URL('../package.json', up)) {
    try {
      const manifest = JSON.parse(readFileSync(up, 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'cairn' && manifest.version) return manifest.version;
    } catch {
      // not here: one level up
    }
  }
  return 'unknown';
}

const processIo = (): Io => ({ stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, cwd: process.cwd() });

/** Runs `cairn <argv>` and resolves to its exit code. */
export async function main(argv: string[], io: Io = processIo()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(MAIN_HELP);
    return 0;
  }
  if (name === '--version' || name === '-v') {
    io.stdout.write(`${version()}\n`);
    return 0;
  }
  if (name === undefined) {
    io.stderr.write(`cairn: which command?\n\n${MAIN_HELP}`);
    return HEADLESS_EXIT_CODES.usage;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    io.stderr.write(`cairn: unknown command ${JSON.stringify(name)}. Commands: ${Object.keys(COMMANDS).join(', ')}; see cairn --help.\n`);
    return HEADLESS_EXIT_CODES.usage;
  }
  try {
    return await command(rest, io);
  } catch (error) {
    // Every message is redacted: a tools module or a store can throw with a key in its text.
    const usage = error instanceof UsageError;
    const message = redactSecrets(usage ? error.message : error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    io.stderr.write(`cairn ${name}: ${message}\n${usage ? `See cairn ${name} --help.\n` : ''}`);
    // With --json, stdout stays JSON: the error, as a script reads it.
    if (rest.includes('--json')) {
      io.stdout.write(`${JSON.stringify({ error: { code: usage ? 'usage' : 'failed', message } }, null, 2)}\n`);
    }
    return usage ? HEADLESS_EXIT_CODES.usage : HEADLESS_EXIT_CODES.failed;
  }
}
