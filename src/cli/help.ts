/** The `--help` text of `cairn` and of each command. */

export const MAIN_HELP = `Usage: cairn <command> [options]

Durable agent runs from a shell: a run that stops (for an approval, a crash,
a limit) is stored and goes on later with \`cairn resume\`.

Commands:
  demo                 run a keyless demo agent that stops for your approval
  run [prompt]         start a run (the prompt from the argument or stdin)
  resume <runId>       answer what a stored run waits for, and go on
  inspect <runId>      show a stored run without running anything
  chart <runId>        draw a stored run on its statecharts (an offline HTML page)
  runs                 list stored runs
  backup <dest>        copy the run store consistently, while runs work
  doctor               check a configuration before running it
  check                before an upgrade: would the stored runs resume?
  worker               work runs from the PostgreSQL work queue (many machines)
  requeue <id>         put a dead-lettered job back on the work queue

Options:
  -h, --help           show help (also after any command)
  -v, --version        print the version

Exit codes: 0 completed, 1 failed, 2 usage error, 3 pending, 4 stopped,
5 cancelled, 6 limit, 7 busy, 8 doctor found an error (or check found a run
that would not resume).
The run store defaults to .cairn/runs.sqlite under the working directory.
Ctrl-C during run or resume stops the run at its next step (exit 3, resume it
later); a second Ctrl-C aborts it (exit 5).
`;

const STORE = '  --store <path>       the SQLite run store (default .cairn/runs.sqlite)';

const MODEL_FLAGS = `  --model <model>      the model: a provider model, or a scripted model file
                       (a value that is an existing file, or has none of the
                       prefixes below, is a file of { "modelId"?, "turns" })
                         openai:<model>             OpenAI, Responses API
                         openai-chat:<model>        OpenAI, Chat Completions
                         anthropic:<model>          Anthropic Messages
                         google:<model>             Gemini generateContent
                         openai-compatible:<model>  any Chat Completions server
                                                    (needs --base-url)
  --fallback <model>   a model to fail over to when a call fails with a
                       transient error before its first content (repeatable,
                       in order)
  --base-url <url>     the API base of the --model's provider (also used by
                       fallbacks of the same provider)
  --provider-name <n>  the name an openai-compatible model reports
                       (default openai-compatible)
  --api-key-env <VAR>  the variable an openai-compatible server's key is read
                       from (default: no key)
  --max-retries <n>    more attempts of a call on the same model after a
                       retryable failure (default 2)
  --model-timeout <ms> most milliseconds one model attempt may take`;

const KEYS = `Keys are read from the environment only, and never recorded: OPENAI_API_KEY,
ANTHROPIC_API_KEY, GEMINI_API_KEY (or GOOGLE_API_KEY), and --api-key-env.`;
const LEASE = `  --lease-ttl <ms>     how long the run's lease outlives a process that stops
                       renewing it (default 10000)`;

export const RUN_HELP = `Usage: cairn run [prompt] --model <model> [options]

Starts a run. Without a prompt argument the prompt is read from stdin.
Progress goes to stderr (on a terminal, with the model's text as it streams);
the report to stdout.

Options:
${MODEL_FLAGS}
  --tools <module>     an ES module exporting \`tools\` (or a default export)
  --skills <dir>       a folder of <id>/SKILL.md skills (repeatable)
  --project-dir <dir>  load AGENTS.md / CLAUDE.md from the repository root
                       down to <dir>
  --run-id <id>        the run's id (default: generated)
  --max-steps <n>      most model turns (default 20)
${STORE}
${LEASE}
  --json               print the report as JSON
  --quiet              no progress on stderr
  -h, --help           show this help

${KEYS}
A provider model without its key is a usage error (exit 2), found before
anything is written.

A resume reuses the model, fallbacks, tools, skills and max steps recorded for
the run. While a leg works it holds the run's lease: another cairn run or
resume of the same run exits 7 (busy) until the lease is released or expires.

Ctrl-C stops the run at its next step boundary: it is stored as drained and
goes on with cairn resume <runId> (exit 3). A second Ctrl-C aborts the leg
(exit 5).
`;

export const DEMO_HELP = `Usage: cairn demo [options]

Runs a scripted agent (no API key) that checks a build and asks to deploy it.
The deploy needs your approval: the run stops (exit 3) and prints the
command that approves it. Each deploy appends a line to demo-deploys.log
beside the store.

Options:
${STORE}
${LEASE}
  --run-id <id>        the run's id (default: generated)
  --json               print the report as JSON
  --quiet              no progress on stderr
  -h, --help           show this help
`;

export const RESUME_HELP = `Usage: cairn resume <runId> [answers] [options]

Goes on with a stored run, answering what it waits for. The model, fallbacks,
tools and skills are the ones recorded when the run started; flags override
them.

Answers (each repeatable):
  --approve <approvalId>        approve a pending tool call
  --deny <approvalId>           deny it (with --reason <text>)
  --reason <text>               the reason given with every --deny
  --client-result <callId>=<json>   the result of a client tool call
  --retry <callId>              run a call whose outcome is unknown again
  --reconcile <callId>=<json>   record what such a call did instead
  --reconcile-error <callId>=<json> record that it failed, with this error
  --retry-failed                go on after a transient failure

Options (each replaces what was recorded):
  --model <model>      the model (a provider model or a scripted model file),
                       with --base-url, --provider-name, --api-key-env
  --fallback <model>   the fallbacks (repeatable)
  --max-retries <n>    more attempts of a call on the same model
  --model-timeout <ms> most milliseconds one model attempt may take
  --tools <module>     override the recorded tools module
  --skills <dir>       override the recorded skill folders (repeatable)
${STORE}
${LEASE}
  --json               print the report as JSON
  --quiet              no progress on stderr
  -h, --help           show this help

${KEYS}

An approval takes one verdict: --approve and --deny of the same id is a usage
error. A call that ran under an approval and was cut off is retried under the
verdict the run recorded; no new --approve is needed.

A resume must use the run's model, fallbacks, tools and skills: a change is
refused (exit 1) and leaves the stored run as it was. A run another process
holds exits 7 (busy) and says when the holder's lease lapses; after a crash it
lapses --lease-ttl after its last renewal. Ctrl-C works as for cairn run.
`;

export const INSPECT_HELP = `Usage: cairn inspect <runId> [options]

Reports a stored run without a model call or a write: the store is opened
read-only, so a store you cannot write works too. The exit code is the run's,
as the table says (3 while it waits, 0 once it completed).

Options:
${STORE}
  --json               print the report as JSON
  -h, --help           show this help
`;

export const CHART_HELP = `Usage: cairn chart <runId> [options]

Draws a stored run on its statecharts, without a model call or a write (the
store is opened read-only). The default is one self-contained HTML page that
works offline: the run chart with the states the run is in marked, the
tool-call chart of each open call with its stage, and the timeline of the
model steps; click a step or a call to see its states, receipt and outcome.
It shows what inspect shows, no more: no tokens, arguments or results.

Options:
  --format <format>    html (default), mermaid or dot (the run chart, then
                       each open call's chart, as text), or json (the run as
                       describeRun sees it)
  --out <file>         write to this file instead of stdout
  --open               open the file with xdg-open (open on macOS); without
                       --out, the page is written to a file in the temp folder
  --call <callId>      also draw this call's chart, and show it first
${STORE}
  -h, --help           show this help
`;

export const RUNS_HELP = `Usage: cairn runs [options]

Lists stored runs, the most recently updated first. The store is opened
read-only.

Options:
  --status <status>    only runs in this status (repeatable): running, suspended,
                       drained, completed, stopped, failed
  --limit <n>          at most n runs (default 50, at most 1000)
${STORE}
  --json               print the list as JSON
  --dead               list the work queue's dead jobs instead (see cairn runs --dead --help)
  -h, --help           show this help
`;

export const BACKUP_HELP = `Usage: cairn backup <dest> [options]

Writes a consistent copy of the run store to <dest>, which must not exist,
with SQLite's online backup: runs may be working meanwhile, and the copy holds
every run as it was at one moment. The store is opened read-only. Do not copy
a live store's file instead: see docs/cli.md, Backups.

To restore: stop every cairn process on the store, delete the store file and
its -wal and -shm files, and copy the backup in its place.

Options:
${STORE}
  --json               print { store, backup, runs } as JSON
  -h, --help           show this help
`;

export const DOCTOR_HELP = `Usage: cairn doctor [options]

Checks what \`cairn run\` with the same flags would use, without running it
and without a network call: the model and its fallbacks (an API key missing
from the environment is the finding api-key-missing), the call limits, the
tools' names and schemas, skill folders, the Node version for the SQLite
store. Exits 8 when a finding is an error.

Options:
${MODEL_FLAGS}
  --tools <module>     an ES module exporting \`tools\`
  --skills <dir>       a skills folder (repeatable)
${STORE}
  --json               print the report as JSON
  -h, --help           show this help
`;

export const CHECK_HELP = `Usage: cairn check [options]

Before an upgrade: loads every stored run that can still go on (running,
suspended, drained, or failed for a transient cause), checks and migrates its
record as a resume would, replays its history through this Cairn's machines,
and compares its binding with the tools and model given. Prints which runs
would resume and why each of the others would not (binding changed, and which
part; a machine version this Cairn does not know; a history that does not
replay to its snapshot; a corrupt record). The store is opened read-only: nothing is written.
Exits 0 when every run would resume, 8 when any would not.

Options:
${STORE}
  --tools <module>     compare with the tools this ES module exports
  --model <model>      compare with this model (as for cairn run)
  --json               print the checks as JSON
  -h, --help           show this help
`;
