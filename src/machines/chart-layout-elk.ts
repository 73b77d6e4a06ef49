/**
 * The Eclipse Layout Kernel (elkjs), run in this process and synchronously, so that
 * `renderRunChartHtml` stays a plain function that returns a string.
 *
 * elkjs's public API answers with a promise because it is built to post messages to a web worker;
 * its bundled build (`elkjs/lib/elk.bundled.js`) runs the same layout code in-process behind a
 * stand-in worker, and only defers the hand-over to a timer. Here that stand-in's dispatcher is
 * called directly with the messages elkjs's API would post (`register`, then `layout`): the layout
 * itself is synchronous, so the laid-out graph is there when the call returns. No thread, no
 * worker file, no network. The bundle (1.6 MB) is loaded on the first layout, not on import.
 */
import { createRequire } from 'node:module';
import { CairnError } from '../errors/index.js';

/** The parts of an ELK JSON graph that Cairn writes and reads back (see elkjs's `ElkNode`). */
export interface ElkLabel {
  text: string;
  width: number;
  height: number;
  x?: number;
  y?: number;
}

export interface ElkPoint {
  x: number;
  y: number;
}

export interface ElkEdge {
  id: string;
  sources: string[];
  targets: string[];
  labels?: ElkLabel[];
  layoutOptions?: Record<string, string>;
  sections?: { startPoint: ElkPoint; endPoint: ElkPoint; bendPoints?: ElkPoint[] }[];
}

export interface ElkNode {
  id: string;
  width?: number;
  height?: number;
  x?: number;
  y?: number;
  layoutOptions?: Record<string, string>;
  children?: ElkNode[];
  edges?: ElkEdge[];
}

interface Answer {
  id: number;
  data?: ElkNode;
  error?: unknown;
}

interface Dispatcher {
  saveDispatch(message: { data: Record<string, unknown> }): void;
}

let engine: { run(message: Record<string, unknown>): Answer } | undefined;

function load(): NonNullable<typeof engine> {
  if (engine) return engine;
  const require = createRequire(import.meta.url);
  const ELK = require('elkjs/lib/elk.bundled.js') as new () => { worker?: { worker?: { dispatcher?: Dispatcher; onmessage?: unknown } } };
  const stand = new ELK().worker?.worker;
  const dispatcher = stand?.dispatcher;
  if (!stand || typeof dispatcher?.saveDispatch !== 'function') {
    throw new CairnError('internal', 'chart layout: this elkjs build has no in-process dispatcher (Cairn is tested with elkjs 0.12)');
  }
  let answer: Answer | undefined;
  // The stand-in answers through onmessage; the promise-based wrapper around it is bypassed.
  stand.onmessage = (message: { data: Answer }) => {
    answer = message.data;
  };
  let id = 1_000_000;
  const run = (message: Record<string, unknown>): Answer => {
    answer = undefined;
    dispatcher.saveDispatch({ data: { ...message, id: ++id } });
    if (!answer) throw new CairnError('internal', 'chart layout: elkjs did not answer synchronously');
    return answer;
  };
  const registered = run({ cmd: 'register', algorithms: ['layered'] });
  if (registered.error !== undefined) throw layoutError(registered.error);
  engine = { run };
  return engine;
}

/** Lays `graph` out with ELK's layered algorithm and returns the laid-out copy ELK answers with. */
export function elkLayout(graph: ElkNode): ElkNode {
  const answer = load().run({ cmd: 'layout', graph: structuredClone(graph), layoutOptions: {}, options: {} });
  if (answer.error !== undefined || !answer.data) throw layoutError(answer.error);
  return answer.data;
}

function layoutError(error: unknown): CairnError {
  const message = error instanceof Error ? error.message : typeof (error as { message?: unknown })?.message === 'string' ? (error as { message: string }).message : String(error);
  return new CairnError('internal', `chart layout: elkjs failed: ${message}`, { cause: error });
}
