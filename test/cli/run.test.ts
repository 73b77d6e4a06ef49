/**
 * `cairn run`, `cairn doctor` and the exit-code table on real processes, and
 * the usage errors: a clear message on stderr, exit 2, and nothing written.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cairn, json, snapshotDir, storedRun, tempDir, write } from './helpers.js';

const LOOK_TOOLS = `export const tools = {
  look: { description: 'Look around.', parameters: { type: 'object', properties: {} }, execute: () => ({ seen: 'a tree' }) },
};
`;

describe('cairn run', () => {
  it('reads the prompt from stdin and completes (0); --json prints the report', async () => {
    const cwd = tempDir();
    write(cwd, {
      'model.json': { modelId: 'scripted-1', turns: [{ toolCalls: [{ toolName: 'look', args: {} }] }, { text: 'I saw a tree.' }] },
      'tools.mjs': LOOK_TOOLS,
    });
    const result = await cairn(['run', '--model', 'model.json', '--tools', 'tools.mjs', '--run-id', 'walk', '--json'], {
      cwd, input: 'Take a walk and tell me what you see.\n',
    });
    expect(result.code, result.stderr).toBe(0);
    const report = json(result);
    expect(report).toMatchObject({ kind: 'run', outcome: 'completed', runId: 'walk', output: 'I saw a tree.', steps: 2, pending: [] });
    expect(report.messages).toContainEqual({ role: 'user', content: 'Take a walk and tell me what you see.' });
    expect(report.messages).toContainEqual(expect.objectContaining({ role: 'tool', toolName: 'look', content: { seen: 'a tree' } }));
    expect(result.stderr).toContain('cairn: calling look {}');
    expect(existsSync(join(cwd, '.cairn', 'runs.sqlite'))).toBe(true);

    // The human summary of the same stored run.
    const inspected = await cairn(['inspect', 'walk'], { cwd });
    expect(inspected.code).toBe(0);
    expect(inspected.stdout).toContain('Run walk completed (exit 0).');
    expect(inspected.stdout).toContain('I saw a tree.');
  });

  it('takes the prompt as an argument; --quiet prints no progress', async () => {
    const cwd = tempDir();
    write(cwd, { 'model.json': { turns: [{ text: 'Hello there.' }] } });
    const result = await cairn(['run', 'Say hello.', '--model', 'model.json', '--quiet'], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^Run run-[a-z0-9]+ completed \(exit 0\)\.\n\nHello there\.\n/);
  });

  it('a scripted 400 fails the run (1)', async () => {
    const cwd = tempDir();
    write(cwd, { 'model.json': { turns: [{ error: { status: 400, message: 'Bad request: no such model' } }] } });
    const result = await cairn(['run', 'x', '--model', 'model.json', '--json'], { cwd });
    expect(result.code).toBe(1);
    expect(json(result)).toMatchObject({ outcome: 'failed', error: { message: 'Bad request: no such model' } });
    expect(json(result).retry).toBeUndefined();
  });

  it('a script that keeps calling a tool stops at --max-steps 2 (6); a resume keeps the limit', async () => {
    const cwd = tempDir();
    const look = { toolCalls: [{ toolName: 'look', args: {} }] };
    write(cwd, { 'model.json': { turns: [look, look, look, look, { text: 'done' }] }, 'tools.mjs': LOOK_TOOLS });
    const result = await cairn(['run', 'Look forever.', '--model', 'model.json', '--tools', 'tools.mjs', '--max-steps', '2', '--run-id', 'loop', '--json'], { cwd });
    expect(result.code, result.stderr).toBe(6);
    expect(json(result)).toMatchObject({ outcome: 'limit', reason: 'max-steps', steps: 2 });
    // The recorded max steps are part of the binding: the resume passes them, so it is not refused.
    const again = await cairn(['resume', 'loop', '--json'], { cwd });
    expect(again.code, again.stderr).toBe(6);
    expect(json(again).error).toBeUndefined();
  });

  it('runs outside the script fail with a message naming the script', async () => {
    const cwd = tempDir();
    write(cwd, { 'model.json': { turns: [{ toolCalls: [{ toolName: 'look' }] }] }, 'tools.mjs': LOOK_TOOLS });
    const result = await cairn(['run', 'x', '--model', 'model.json', '--tools', 'tools.mjs', '--json'], { cwd });
    expect(result.code).toBe(1);
    expect(json(result).error.message).toContain('has 1 turn(s) and the run asked for turn 2');
  });
});

describe('cairn doctor', () => {
  it('exits 0 for a sound configuration and 8 when a finding is an error', async () => {
    const cwd = tempDir();
    write(cwd, {
      'model.json': { turns: [{ text: 'ok' }] },
      'tools.mjs': LOOK_TOOLS,
      'bad-tools.mjs': "export default { 'no spaces please': { parameters: { type: 'object' }, execute: () => 1 } };\n",
    });
    const ok = await cairn(['doctor', '--model', 'model.json', '--tools', 'tools.mjs', '--json'], { cwd });
    expect(ok.code, ok.stdout).toBe(0);
    expect(json(ok)).toMatchObject({ kind: 'doctor', ok: true });

    const bad = await cairn(['doctor', '--model', 'model.json', '--tools', 'bad-tools.mjs'], { cwd });
    expect(bad.code).toBe(8);
    expect(bad.stdout).toMatch(/^error +tool-name-invalid/m);

    const noModel = await cairn(['doctor', '--json'], { cwd });
    expect(noModel.code).toBe(8);
    expect(json(noModel).findings.map((f: { code: string }) => f.code)).toContain('model-missing');

    const missingSkills = await cairn(['doctor', '--model', 'model.json', '--skills', 'no-such-dir', '--json'], { cwd });
    expect(missingSkills.code).toBe(8);
    expect(json(missingSkills).findings.map((f: { code: string }) => f.code)).toContain('skills-dir-missing');
    expect(existsSync(join(cwd, '.cairn'))).toBe(false); // the doctor writes nothing
  });
});

describe('cairn doctor with provider models', () => {
  it('reports a key missing from the environment (8) for the model and each fallback, without writing anything', async () => {
    const cwd = tempDir();
    const r = await cairn(['doctor', '--model', 'openai:gpt-5', '--fallback', 'anthropic:claude-opus-5-5', '--json'], { cwd });
    expect(r.code, r.stderr).toBe(8);
    const findings = json(r).findings.map((f: { severity: string; code: string; path?: string }) => [f.severity, f.code, f.path]);
    expect(findings).toEqual([
      ['error', 'api-key-missing', 'env'],
      ['error', 'api-key-missing', 'fallbackModels[0]'],
      ['info', 'unpriced-model', 'fallbackModels[0]'],
      ['info', 'model-unknown', 'fallbackModels[0]'],
    ]);
    expect(json(r).findings[0].message).toContain('OPENAI_API_KEY');
    expect(existsSync(join(cwd, '.cairn'))).toBe(false);

    // With the keys set it finds nothing wrong with the model; the limits are checked too.
    const ok = await cairn(['doctor', '--model', 'openai:gpt-5', '--max-retries', '0', '--model-timeout', '30000'], { cwd, env: { OPENAI_API_KEY: 'sk-test' } });
    expect(ok.code, ok.stdout).toBe(0);
    expect(ok.stdout).toBe('No errors.\n');
  });

  it('checks the variable --api-key-env names for an OpenAI-compatible server, and needs none without it', async () => {
    const cwd = tempDir();
    const base = ['doctor', '--model', 'openai-compatible:llama3.2', '--base-url', 'http://127.0.0.1:9/v1', '--provider-name', 'ollama'];
    const keyless = await cairn([...base, '--json'], { cwd });
    expect(keyless.code, keyless.stdout).toBe(0);
    expect(json(keyless).findings.map((f: { code: string }) => f.code)).toEqual(['unpriced-model', 'model-unknown']);
    const missing = await cairn([...base, '--api-key-env', 'OLLAMA_KEY', '--json'], { cwd });
    expect(missing.code).toBe(8);
    expect(json(missing).findings[0]).toMatchObject({ code: 'api-key-missing', path: 'apiKeyEnv' });
    expect(json(missing).findings[0].message).toContain('OLLAMA_KEY');
    expect((await cairn([...base, '--api-key-env', 'OLLAMA_KEY'], { cwd, env: { OLLAMA_KEY: 'k' } })).code).toBe(0);
  });
});

describe('usage errors: exit 2, a message on stderr, nothing written', () => {
  const cases: Array<[string, string[], RegExp, string?]> = [
    ['no command', [], /which command/],
    ['an unknown command', ['deploy'], /unknown command "deploy"/],
    ['an unknown flag', ['run', 'x', '--model', 'model.json', '--bogus'], /Unknown option '--bogus'/],
    ['a flag without its value', ['run', 'x', '--model'], /argument missing/],
    ['no --model', ['run', 'x'], /needs --model: a provider model \(openai:<model>, .*\) or a scripted model file/],
    ['an unknown provider prefix', ['run', 'x', '--model', 'acme:rocket-1'], /--model acme:rocket-1: no such file, and "acme" is not a model provider Cairn knows \(openai:, openai-chat:, anthropic:, google:, openai-compatible:\)/],
    ['a provider spec without a model id', ['run', 'x', '--model', 'openai:'], /--model openai:: put the model id after the colon/],
    ['a model id with a space', ['run', 'x', '--model', 'anthropic:claude sonnet'], /put the model id after the colon, without spaces/],
    ['a missing key', ['run', 'x', '--model', 'openai:gpt-5'], /--model openai:gpt-5 needs OPENAI_API_KEY in the environment/],
    ['a missing Google key', ['run', 'x', '--model', 'google:gemini-2.5-flash'], /needs one of GEMINI_API_KEY, GOOGLE_API_KEY, GOOGLE_GENERATIVE_AI_API_KEY/],
    ['a missing fallback key', ['run', 'x', '--model', 'model.json', '--fallback', 'anthropic:claude-haiku-4-5'], /--fallback anthropic:claude-haiku-4-5 needs ANTHROPIC_API_KEY/],
    ['openai-compatible without --base-url', ['run', 'x', '--model', 'openai-compatible:llama3.2'], /needs --base-url <url>/],
    ['a --base-url that is not http', ['run', 'x', '--model', 'openai:gpt-5', '--base-url', 'ftp://example.com/v1'], /--base-url takes an http:\/\/ or https:\/\/ URL/],
    ['a --base-url with credentials', ['run', 'x', '--model', 'openai-compatible:m', '--base-url', 'http://user:secret@localhost:1/v1'], /must not carry credentials/],
    ['--base-url with a scripted model', ['run', 'x', '--model', 'model.json', '--base-url', 'http://localhost:1/v1'], /--base-url goes with a provider model/],
    ['--provider-name on another provider', ['run', 'x', '--model', 'openai:gpt-5', '--provider-name', 'mine'], /--provider-name goes with --model openai-compatible:<model>/],
    ['a bad --provider-name', ['run', 'x', '--model', 'openai-compatible:m', '--base-url', 'http://localhost:1/v1', '--provider-name', 'My Server'], /--provider-name takes a lower-case name/],
    ['--api-key-env given a key', ['run', 'x', '--model', 'openai-compatible:m', '--base-url', 'http://localhost:1/v1', '--api-key-env', 'sk-live-0123456789abcdef'], /--api-key-env takes the name of an environment variable .*got "sk-l…"/],
    ['--api-key-env naming an unset variable', ['run', 'x', '--model', 'openai-compatible:m', '--base-url', 'http://localhost:1/v1', '--api-key-env', 'CAIRN_NO_SUCH_KEY'], /needs CAIRN_NO_SUCH_KEY in the environment/],
    ['an openai-compatible fallback of another model', ['run', 'x', '--model', 'model.json', '--fallback', 'openai-compatible:m'], /an openai-compatible fallback uses the server of an openai-compatible --model/],
    ['a bad --max-retries', ['run', 'x', '--model', 'model.json', '--max-retries', 'many'], /--max-retries must be a whole number from 0 to 100, got many\./],
    ['a bad --model-timeout', ['run', 'x', '--model', 'model.json', '--model-timeout', '0'], /--model-timeout must be a whole number of milliseconds from 1 to 86400000, got 0\./],
    ['a missing --model file', ['run', 'x', '--model', 'nope.json'], /--model nope.json: no such file/],
    ['a model file that is not JSON', ['run', 'x', '--model', 'broken.json'], /--model broken.json: not valid JSON/],
    ['a missing --tools file', ['run', 'x', '--model', 'model.json', '--tools', 'nope.mjs'], /--tools nope.mjs: no such file/],
    ['a mistyped --project-dir', ['run', 'x', '--model', 'model.json', '--project-dir', 'scr'], /--project-dir scr: /],
    ['a --project-dir that is a file', ['run', 'x', '--model', 'model.json', '--project-dir', 'model.json'], /--project-dir model.json: /],
    ['a mistyped --skills dir', ['run', 'x', '--model', 'model.json', '--skills', 'skils'], /--skills skils: not a directory/],
    ['a bad --max-steps', ['run', 'x', '--model', 'model.json', '--max-steps', '0'], /--max-steps must be a whole number of at least 1, got 0\./],
    ['a negative --max-steps', ['run', 'x', '--model', 'model.json', '--max-steps', '-1'], /^cairn run: --max-steps must be a whole number of at least 1, got -1\.\n/],
    ['a fractional --max-steps', ['run', 'x', '--model', 'model.json', '--max-steps', '1.5'], /--max-steps must be a whole number of at least 1, got 1\.5\./],
    ['a negative --max-retries', ['run', 'x', '--model', 'model.json', '--max-retries', '-2'], /--max-retries must be a whole number from 0 to 100, got -2\./],
    ['a negative --model-timeout', ['run', 'x', '--model', 'model.json', '--model-timeout', '-5'], /--model-timeout must be a whole number of milliseconds from 1 to 86400000, got -5\./],
    ['a bad --lease-ttl', ['run', 'x', '--model', 'model.json', '--lease-ttl', '-100'], /--lease-ttl must be a whole number of milliseconds from 30 to 86400000, got -100\./],
    ['a bad --limit', ['runs', '--limit', '-1'], /--limit must be a whole number from 1 to 1000, got -1\./],
    ['a --limit too large', ['runs', '--limit', '5000'], /--limit must be a whole number from 1 to 1000, got 5000\./],
    ['a resume --max-retries', ['resume', 'r1', '--max-retries', '-1'], /--max-retries must be a whole number from 0 to 100, got -1\./],
    ['a typo in a turn of the model file', ['run', 'x', '--model', 'typo-turn.json'], /--model typo-turn.json: turn 1 has an unknown key "txt" \(did you mean "text"\?\)/],
    ['an unknown top-level key in the model file', ['run', 'x', '--model', 'typo-top.json'], /--model typo-top.json: the file has an unknown key "modleId" \(did you mean "modelId"\?\)/],
    ['a typo in a tool call of the model file', ['run', 'x', '--model', 'typo-call.json'], /turn 1, tool call 1 has an unknown key "tool"/],
    ['an empty prompt on stdin', ['run', '--model', 'model.json'], /stdin was empty/],
    ['resume without a run id', ['resume'], /needs the run id/],
    ['inspect without a store', ['inspect', 'r1'], /no run store/],
    ['a bad --status', ['runs', '--status', 'done'], /--status takes one of/],
  ];

  it.each(cases)('%s', async (_name, args, message) => {
    const cwd = tempDir();
    write(cwd, {
      'model.json': { turns: [{ text: 'ok' }] }, 'broken.json': '{ "turns": [', 'src/.keep': '',
      'typo-turn.json': { turns: [{ txt: 'hello' }] },
      'typo-top.json': { modleId: 'm', turns: [{ text: 'hello' }] },
      'typo-call.json': { turns: [{ toolCalls: [{ tool: 'look' }] }] },
    });
    const before = snapshotDir(cwd);
    const result = await cairn(args, { cwd });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).toBe('');
    expect(existsSync(join(cwd, '.cairn'))).toBe(false);
    expect(snapshotDir(cwd)).toEqual(before);
  });

  it('answers that do not parse leave a stored run untouched: --reconcile x=notjson, an unknown run id', async () => {
    const cwd = tempDir();
    await cairn(['demo', '--run-id', 'd', '--quiet'], { cwd });
    const before = snapshotDir(cwd);
    for (const args of [
      ['resume', 'd', '--reconcile', 'x=notjson'],
      ['resume', 'd', '--client-result', 'nocallid'],
      ['resume', 'd', '--reason', 'no denial'],
      ['resume', 'ghost', '--approve', 'a'],
      ['inspect', 'ghost'],
      ['run', 'x', '--model', 'model.json', '--run-id', 'd'],
    ]) {
      write(cwd, { 'model.json': { turns: [{ text: 'ok' }] } });
      const result = await cairn(args, { cwd });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(/^cairn \w+: .+/);
    }
    const after = snapshotDir(cwd);
    delete after['/model.json'];
    expect(after).toEqual(before);
  });

  it('--help works on cairn and on every command; --version prints the version', async () => {
    const cwd = tempDir();
    const main = await cairn(['--help'], { cwd });
    expect(main.code).toBe(0);
    for (const command of ['demo', 'run', 'resume', 'inspect', 'runs', 'backup', 'doctor']) {
      expect(main.stdout).toContain(`  ${command}`);
      const help = await cairn([command, '--help'], { cwd });
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: cairn ${command}`));
      expect((await cairn([command, '-h'], { cwd })).stdout).toBe(help.stdout);
    }
    // The model flags, on every command that takes them.
    for (const command of ['run', 'resume', 'doctor']) {
      const help = (await cairn([command, '--help'], { cwd })).stdout;
      for (const flagName of ['--model <model>', '--fallback <model>', '--max-retries <n>', '--model-timeout <ms>']) expect(help, `${command} --help`).toContain(flagName);
    }
    const runHelp = (await cairn(['run', '--help'], { cwd })).stdout;
    for (const text of ['openai:<model>', 'openai-chat:<model>', 'anthropic:<model>', 'google:<model>', 'openai-compatible:<model>', '--base-url <url>', '--provider-name <n>', '--api-key-env <VAR>', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY']) {
      expect(runHelp).toContain(text);
    }
    for (const line of runHelp.split('\n')) expect(line.length, line).toBeLessThanOrEqual(80);
    const version = await cairn(['--version'], { cwd });
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
    expect(existsSync(join(cwd, '.cairn'))).toBe(false);
  });
});

describe('cairn resume answers', () => {
  it('--client-result answers a client tool; a changed model fails the resume (1) and leaves the run as it was', async () => {
    const cwd = tempDir();
    write(cwd, {
      'model.json': { modelId: 'picker', turns: [{ toolCalls: [{ toolName: 'pick_color', args: {} }] }, { text: 'You picked teal.' }] },
      'other.json': { modelId: 'another', turns: [{ text: 'x' }] },
      'tools.mjs': "export default { pick_color: { description: 'Ask the user for a color.', parameters: { type: 'object' } } };\n",
    });
    const first = await cairn(['run', 'Pick a color.', '--model', 'model.json', '--tools', 'tools.mjs', '--run-id', 'c'], { cwd });
    expect(first.code, first.stderr).toBe(3);
    expect(first.stdout).toContain("npx cairn resume c --client-result 'call_1_1=<json>'");

    const store = join(cwd, '.cairn', 'runs.sqlite');
    const before = storedRun(store, 'c');
    const changed = await cairn(['resume', 'c', '--model', 'other.json', '--client-result', 'call_1_1="teal"', '--json'], { cwd });
    expect(changed.code).toBe(1);
    expect(json(changed).error.code).toBe('binding_changed');
    expect(storedRun(store, 'c')).toEqual(before);

    const answered = await cairn(['resume', 'c', '--client-result', 'call_1_1="teal"', '--json'], { cwd });
    expect(answered.code, answered.stderr).toBe(0);
    expect(json(answered).output).toBe('You picked teal.');
    expect(json(answered).messages).toContainEqual(expect.objectContaining({ role: 'tool', toolCallId: 'call_1_1', content: 'teal' }));
  });

  it('a transient failure carries retry (1); --retry-failed goes on from the last checkpoint (0)', async () => {
    const cwd = tempDir();
    write(cwd, {
      // The first attempt and its two retries all answer 503.
      'outage.json': { modelId: 'm', turns: [1, 2, 3].map(() => ({ error: { status: 503, message: 'Service unavailable' } })) },
      'back.json': { modelId: 'm', turns: [{ text: 'Summary ready.' }] },
    });
    const first = await cairn(['run', 'Summarize.', '--model', 'outage.json', '--run-id', 't'], { cwd });
    expect(first.code).toBe(1);
    expect(first.stdout).toContain('npx cairn resume t --retry-failed');
    // The provider is back: the same model id, a script that answers.
    const retried = await cairn(['resume', 't', '--retry-failed', '--model', 'back.json', '--json'], { cwd });
    expect(retried.code, retried.stderr).toBe(0);
    expect(json(retried).output).toBe('Summary ready.');
  });
});
