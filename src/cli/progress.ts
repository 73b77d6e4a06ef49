/**
 * Progress on stderr while a leg works: the step, the tool being called, the
 * approvals asked for. On a terminal a spinner line is redrawn in place and
 * finished lines scroll above it, and the model's text shows as it streams in
 * (the spinner rests meanwhile); otherwise (a pipe, a CI log) each event is
 * one plain line and the text is left to the report.
 */
import type { AgentEvent } from '../agent/types.js';

export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface Progress {
  onEvent(event: AgentEvent<unknown>): void;
  /** A line of the CLI's own among the progress lines (what Ctrl-C does). */
  note(text: string): void;
  /** Clears the spinner; call on every path before the report is printed. */
  stop(): void;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const FRAME_MS = 80;
const ARGS_MAX = 80;


function brief(value: unknown): string {
  const text = JSON.stringify(value) ?? '';
  return text.length > ARGS_MAX ? `${text.slice(0, ARGS_MAX - 1)}…` : text;
}

/** The line an event adds to the log, and the spinner's status while it lasts. */
function describe(event: AgentEvent<unknown>): { line?: string; status?: string } {
  switch (event.type) {
    case 'run-start':
      return { line: `${event.resumed ? 'resuming' : 'starting'} run ${event.runId}` };
    case 'step-start':
      return { line: `step ${event.step + 1}${event.phase === 'finalize' ? ' (final answer)' : ''}`, status: `step ${event.step + 1}: waiting for the model` };
    case 'tool-call-start':
      return { line: `calling ${event.toolName} ${brief(event.args)}`, status: `running ${event.toolName}` };
    case 'tool-call-end': {
      const how = event.outcome ?? (event.isError ? 'error' : 'done');
      return { line: `${event.toolName}: ${how}`, status: 'working' };
    }
    case 'approval-request':
      return { line: `approval needed: ${event.approval.toolName} ${brief(event.approval.args)} (approval ${event.approval.approvalId})` };
    case 'client-call-request':
      return { line: `waiting for a client result: ${event.call.toolName} (call ${event.call.toolCallId})` };
    case 'warning':
      return { line: `warning: ${event.message}` };
    default:
      return {};
  }
}

/** Control characters a model's text must not send to a terminal (escape sequences, carriage returns); newlines and tabs stay. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** No progress lines (`--quiet`); the CLI's own notes (what Ctrl-C does) still show. */
const quietProgress = (stream: ProgressStream): Progress => ({
  onEvent: () => undefined,
  note: (text) => stream.write(`cairn: ${text}\n`),
  stop: () => undefined,
});

/** The progress of a leg on `stream`, or only the CLI's notes when `quiet`. */
export function progressFor(quiet: boolean, stream: ProgressStream): Progress {
  return quiet ? quietProgress(stream) : createProgress(stream);
}

export function createProgress(stream: ProgressStream): Progress {
  if (!stream.isTTY) {
    return {
      onEvent(event) {
        const { line } = describe(event);
        if (line) stream.write(`cairn: ${line}\n`);
      },
      note: (text) => stream.write(`cairn: ${text}\n`),
      stop: () => undefined,
    };
  }
  let status = 'starting';
  let frame = 0;
  let drawn = false;
  // While the model's text streams, it owns the line: the spinner waits until the text ends.
  let streaming = false;
  let lineStart = true;
  let stopped = false;
  const clear = () => {
    if (drawn) stream.write('\r\x1b[2K');
    drawn = false;
  };
  const draw = () => {
    if (streaming) return;
    clear();
    stream.write(`${FRAMES[frame % FRAMES.length]} ${status}`);
    drawn = true;
  };
  const writeText = (delta: string) => {
    if (!streaming) {
      clear();
      streaming = true;
      lineStart = true;
    }
    const text = delta.replace(CONTROL, '');
    // Indented like the other lines, so the answer stands apart from the log.
    for (const piece of text.split(/(\n)/)) {
      if (piece === '') continue;
      if (piece === '\n') {
        stream.write('\n');
        lineStart = true;
        continue;
      }
      stream.write(lineStart ? `  ${piece}` : piece);
      lineStart = false;
    }
  };
  const endText = () => {
    if (!streaming) return;
    if (!lineStart) stream.write('\n');
    streaming = false;
  };
  const timer = setInterval(() => {
    frame++;
    draw();
  }, FRAME_MS);
  timer.unref();
  draw();
  return {
    onEvent(event) {
      if (event.type === 'text-delta') {
        writeText(event.delta);
        return;
      }
      if (event.type === 'reasoning-delta') return;
      endText();
      const { line, status: next } = describe(event);
      if (next) status = next;
      if (line) {
        clear();
        stream.write(`  ${line}\n`);
      }
      draw();
    },
    note(text) {
      endText();
      clear();
      stream.write(`  ${text}\n`);
      if (!stopped) draw();
    },
    stop() {
      stopped = true;
      clearInterval(timer);
      endText();
      clear();
    },
  };
}
