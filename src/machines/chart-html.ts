/**
 * `renderRunChartHtml`: one stored run on its charts, as a single HTML page that works offline.
 * It draws only what `describeRun` reports (no tokens, no arguments, no results, no transcript
 * text) and the machines' own definitions; every piece of text is escaped, and the page's
 * Content-Security-Policy refuses any request it could make (`default-src 'none'`).
 */
import { runMachine, toolCallMachine } from '../../machines/index.js';
import type { AgentRunEnvelope } from '../agent/types.js';
import { InvalidOptionsError } from '../errors/index.js';
import { escapeHtml as esc, machineBoxesHtml } from './chart-boxes.js';
import { PAGE_CSS, PAGE_SCRIPT } from './chart-page-assets.js';
import { item, list, statesNote, summaryHtml, waitingHtml } from './chart-summary.js';
import { machineSvg } from './chart-svg.js';
import { describeRun, type DescribedCall, type DescribedStep, type RunDescription } from './describe.js';

/** Options of {@link renderRunChartHtml}. */
export interface RunChartHtmlOptions {
  /**
   * A call to select, by its `toolCallId`: its tool-call chart is drawn (an open call's is drawn
   * anyway), and its details are what the page shows first. A call that has ended has no chart
   * state left in the record, so its chart is drawn without a highlight. An id that is no call
   * of the run throws an `InvalidOptionsError` (code `invalid_options`).
   * @default undefined (the run's present state is shown first)
   */
  callId?: string;
  /**
   * The page's title.
   * @default `Run <runId>`
   */
  title?: string;
}

/** A call as the page lists it: from the step history, the open calls, or both. */
interface PageCall {
  toolCallId: string;
  toolName: string;
  modelStep: number;
  /** Its details' element id. */
  detailId: string;
  open: DescribedCall | undefined;
  history: DescribedStep['calls'][number] | undefined;
  /** The element id of its tool-call chart, when one is drawn. */
  chartId: string | undefined;
}

/**
 * One self-contained HTML page for a stored run: the run chart with its active states marked,
 * the tool-call chart of each open call (and of `options.callId`) with the call's stage marked,
 * and the timeline of the model steps; clicking a step, a call or the run's present shows its
 * states and details. State boxes carry `data-state="<dotted path>"`, the active ones
 * `data-current="true"`. The envelope is checked (and an older one migrated) as by
 * {@link describeRun}, which throws the same errors.
 *
 * @example
 * ```ts
 * import { renderRunChartHtml } from 'cairn/machines';
 * writeFileSync('run.html', renderRunChartHtml(await store.load('run-1')));
 * ```
 */
export function renderRunChartHtml(envelope: AgentRunEnvelope, options: RunChartHtmlOptions = {}): string {
  const run = describeRun(envelope);
  const calls = pageCalls(run, options.callId);
  const selected = options.callId === undefined ? undefined : calls.find((c) => c.toolCallId === options.callId && c.chartId !== undefined);
  const title = options.title ?? `Run ${run.runId}`;
  const shownFirst = selected?.detailId ?? 'd-now';

  const charted = calls.filter((c) => c.chartId !== undefined);
  const callCharts = charted.map((call) => callChartHtml(call, call === selected)).join('');
  const body = [
    `<header><h1>${esc(title)}</h1>${summaryHtml(run, envelope)}</header>`,
    '<div class="top">',
    `<section class="panel" id="timeline-panel"><h2>Timeline</h2>${timelineHtml(run, calls, shownFirst)}</section>`,
    `<aside class="panel" id="details" aria-live="polite"><h2>Details</h2>${detailsHtml(run, calls, shownFirst)}</aside>`,
    '</div>',
    `<section class="chart" data-chart="run" id="chart-run"><h2>Run chart <code>${esc(run.machine.id)}</code> v${run.machine.version}</h2>`,
    legendHtml(run.states, statesNote(run)),
    diagramHtml(runMachine, 'run', run.states),
    machineBoxesHtml(runMachine, { key: 'run', current: run.states }),
    '</section>',
    callCharts || '<p class="empty">No call is open: the run has no tool-call actor in its record.</p>',
  ].join('\n');

  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    // Nothing may load: no script, style, font, image or connection from anywhere.
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${esc(title)}</title>`,
    `<style>${PAGE_CSS}</style>`,
    '<noscript><style>.detail[hidden] { display: block; }</style></noscript>',
    '</head>',
    `<body data-run-id="${esc(run.runId)}" data-status="${esc(run.status)}">`,
    body,
    `<script>${PAGE_SCRIPT}</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

function pageCalls(run: RunDescription, callId: string | undefined): PageCall[] {
  const calls: PageCall[] = [];
  for (const step of run.steps) {
    step.calls.forEach((history, i) => calls.push({
      toolCallId: history.toolCallId, toolName: history.toolName, modelStep: step.step,
      detailId: `d-call-${step.step}-${i}`, open: undefined, history, chartId: undefined,
    }));
  }
  run.calls.forEach((open, i) => {
    const known = calls.find((c) => c.modelStep === open.modelStep && c.toolCallId === open.toolCallId);
    if (known) known.open = open;
    else calls.push({ ...open, detailId: `d-open-${i}`, open, history: undefined, chartId: undefined });
  });
  if (callId !== undefined && !calls.some((c) => c.toolCallId === callId)) {
    throw new InvalidOptionsError(`renderRunChartHtml: run ${run.runId} has no call ${JSON.stringify(callId)}.`);
  }
  // The latest call with that id is the one selected (an id is normally unique within a run).
  const selected = callId === undefined ? undefined : calls.filter((c) => c.toolCallId === callId).at(-1);
  let n = 0;
  for (const call of calls) if (call.open || call === selected) call.chartId = `chart-call-${n++}`;
  return calls;
}

function legendHtml(states: readonly string[], note = ''): string {
  return `<p class="legend">Marked:<span class="swatch now"></span>a state it is in now (${list(states)})${esc(note)}<span class="swatch active"></span>a state containing one. Each arrow is a transition, labelled <code>EVENT [guard]</code>; a dashed loop is one that stays in its state; a dot marks where a state starts. Below the diagram, the same chart as text: under each state, one line per transition, <code>EVENT [guard] → target</code>.</p>`;
}

/** The laid-out diagram, in a box that scrolls when it is wider than the page. */
function diagramHtml(machine: typeof runMachine | typeof toolCallMachine, key: string, current: readonly string[]): string {
  return `<div class="diagram" data-diagram="${esc(key)}">${machineSvg(machine, { key, current })}</div><h3 class="as-text">The same chart as text</h3>`;
}

const pressed = (id: string, shownFirst: string) => `aria-pressed="${id === shownFirst}"`;

function callButton(call: PageCall, shownFirst: string): string {
  const tag = call.open ? `<span class="tag open">${esc(call.open.stage)}</span>`
    : call.history ? `<span class="tag${call.history.outcome === 'error' ? ' error' : ''}">${esc(call.history.outcome)}</span>` : '';
  const target = call.chartId ? ` data-chart-target="${esc(call.chartId)}"` : '';
  return `<button type="button" class="call-ref" data-detail="${esc(call.detailId)}" data-call-id="${esc(call.toolCallId)}"${target} ${pressed(call.detailId, shownFirst)}>${esc(call.toolName)} <code>${esc(call.toolCallId)}</code>${tag}</button>`;
}

function timelineHtml(run: RunDescription, calls: PageCall[], shownFirst: string): string {
  const steps = run.steps.map((step) => {
    const own = calls.filter((c) => c.modelStep === step.step);
    const id = `d-step-${step.step}`;
    return `<li data-step="${step.step}"><button type="button" class="step" data-detail="${id}" ${pressed(id, shownFirst)}>Step ${step.step}</button> <span class="empty">${step.calls.length === 0 ? 'no tool call' : `${step.calls.length} call${step.calls.length === 1 ? '' : 's'}`}</span><div class="calls">${own.map((c) => callButton(c, shownFirst)).join('')}</div></li>`;
  });
  // Open calls the transcript does not list (none in practice): still reachable from the timeline.
  const stray = calls.filter((c) => c.history === undefined);
  if (stray.length > 0) steps.push(`<li><span class="empty">open calls</span><div class="calls">${stray.map((c) => callButton(c, shownFirst)).join('')}</div></li>`);
  steps.push(`<li class="now"><button type="button" class="step now" data-detail="d-now" ${pressed('d-now', shownFirst)}>Now: ${esc(run.status)}</button> <span class="states-list">${list(run.states)}</span></li>`);
  return `<ol class="timeline">${steps.join('')}</ol>`;
}

function detailsHtml(run: RunDescription, calls: PageCall[], shownFirst: string): string {
  const detail = (id: string, kind: string, heading: string, rows: string[], extra = ''): string =>
    `<div class="detail" id="${esc(id)}" data-detail-of="${kind}"${extra}${id === shownFirst ? '' : ' hidden'}><h3>${esc(heading)}</h3><dl>${rows.join('')}</dl></div>`;
  const out = [detail('d-now', 'run', `Run ${run.runId} now`, [
    item('Status', esc(run.status)),
    item('States', `<span data-field="states">${list(run.states)}</span>`),
    item('Open calls', list(run.calls.map((c) => `${c.toolName} ${c.toolCallId}: ${c.stage}`))),
    item('Waiting for', waitingHtml(run)),
  ])];
  for (const step of run.steps) {
    out.push(detail(`d-step-${step.step}`, 'step', `Step ${step.step}`, [
      item('Text', esc(`${step.textLength} characters (not shown)`)),
      ...(step.savedAt !== null ? [item('Saved', esc(`turn in revision ${step.savedAt}`))] : []),
      item('Calls', list(step.calls.map((c) => `${c.toolName} ${c.toolCallId}: ${c.outcome}, receipt ${c.receipt ?? 'none'}${savedNote(c)}`))),
    ], ` data-step="${step.step}"`));
  }
  for (const call of calls) {
    const rows = [
      item('Tool', `<code>${esc(call.toolName)}</code>`),
      item('Call id', `<code>${esc(call.toolCallId)}</code>`),
      item('Model step', String(call.modelStep)),
      item('Stage', `<strong data-field="stage">${call.open ? esc(call.open.stage) : '<span class="empty">ended (the record keeps no chart state for it)</span>'}</strong>`),
      item('States', `<span data-field="states">${list(call.open?.states ?? [])}</span>`),
      item('Receipt', `<span data-field="receipt">${esc(call.open?.receipt ?? call.history?.receipt ?? 'none')}</span>`),
      item('Outcome', `<span data-field="outcome">${esc(call.history?.outcome ?? 'open')}</span>`),
    ];
    const wait = waitOf(run, call);
    if (wait) rows.push(item('Waiting for', esc(wait)));
    if (call.chartId) rows.push(item('Chart', `<a href="#${esc(call.chartId)}">its tool-call chart</a>`));
    out.push(detail(call.detailId, 'call', `${call.toolName} ${call.toolCallId}`, rows, ` data-call-id="${esc(call.toolCallId)}"`));
  }
  return out.join('');
}

function waitOf(run: RunDescription, call: PageCall): string | undefined {
  const same = (c: { toolCallId: string; modelStep: number }) => c.toolCallId === call.toolCallId && c.modelStep === call.modelStep;
  const approval = run.pendingApprovals.find(same);
  if (approval) return `approval ${approval.approvalId}`;
  if (run.pendingClientCalls.some(same)) return 'the client\'s result';
  if (run.unknownEffects.some(same)) return 'a decision: its effect may or may not have happened (retry or reconcile it)';
  return undefined;
}

function callChartHtml(call: PageCall, selected: boolean): string {
  const states = call.open?.states ?? [];
  const where = call.open ? `stage <strong>${esc(call.open.stage)}</strong>` : 'ended: no chart state is kept for it';
  return [
    `<section class="chart${selected ? ' selected' : ''}" data-chart="call" id="${esc(call.chartId!)}" data-call-id="${esc(call.toolCallId)}" data-stage="${esc(call.open?.stage ?? '')}">`,
    `<h2>Call <code>${esc(call.toolCallId)}</code> (${esc(call.toolName)}, step ${call.modelStep}): ${where}</h2>`,
    call.open ? legendHtml(states) : '',
    diagramHtml(toolCallMachine, call.chartId!, states),
    machineBoxesHtml(toolCallMachine, { key: call.chartId!, current: states }),
    '</section>',
  ].join('\n');
}

/** Which saves hold a call's result and its receipt, when the record says. */
function savedNote(call: DescribedStep['calls'][number]): string {
  const parts = [
    ...(call.resultSavedAt !== null ? [`result saved in revision ${call.resultSavedAt}`] : []),
    ...(call.receiptSavedAt !== null ? [`receipt last written in revision ${call.receiptSavedAt}`] : []),
  ];
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}
