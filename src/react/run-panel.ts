/**
 * RunPanel: a small live view of a run, from its latest AgentRunView. It
 * shows only what a view carries: status, hierarchy, steps against the limit,
 * tokens and tool counts.
 */
import { createElement, type ReactElement } from 'react';
import type { AgentRunView } from '../agent/run-view.js';

export interface RunPanelProps {
  /** The latest view of the run (an `agent-run-update` event's `view`); nothing is shown without one. */
  view: AgentRunView | null | undefined;
  /** Views of child runs, shown under the run. */
  children?: readonly AgentRunView[];
  className?: string;
}

/**
 * @example
 * createElement(RunPanel, { view: latestView })
 */
export function RunPanel({ view, children = [], className }: RunPanelProps): ReactElement | null {
  if (!view) return null;
  return createElement(
    'section',
    { className: className ?? 'cairn-run-panel', 'data-run-id': view.runId, 'data-status': view.status },
    row(view),
    children.length > 0
      ? createElement('ul', null, ...children.map((child) => createElement('li', { key: child.runId }, row(child))))
      : null,
  );
}

function row(view: AgentRunView): ReactElement {
  const items: [string, string][] = [
    ['run', view.runId + (view.parentRunId ? ` (child of ${view.parentRunId})` : '')],
    ['status', view.status + (view.stopReason ? `: ${view.stopReason}` : '') + (view.errorCode ? `: ${view.errorCode}` : '')],
    ['steps', `${view.steps} / ${view.limits.maxSteps}`],
    ['tokens', `${view.usage.inputTokens} in, ${view.usage.outputTokens} out`],
    ['tools', `${view.tools.completed}/${view.tools.started} done, ${view.tools.failed} failed`],
    ['waiting', `${view.tools.pendingApprovals} approval(s), ${view.tools.pendingClientCalls} client call(s)`],
  ];
  return createElement(
    'dl',
    null,
    ...items.flatMap(([term, value]) => [createElement('dt', { key: `${term}-t` }, term), createElement('dd', { key: `${term}-d` }, value)]),
  );
}
