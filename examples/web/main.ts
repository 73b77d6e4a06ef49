/**
 * The example page: a prompt, the streamed text and tool parts, the approval
 * and the client tool call that wait together, answered in one resume, and a
 * run panel. cairn/ui's agentStateFromParts folds the frames; useChat keeps
 * the run id and cursor in sessionStorage and reconnects after a reload.
 */
import { createElement as h, useState, type ReactNode } from 'react';
import { createRoot } from 'react-dom/client';
import { RunPanel, useChat } from 'cairn/react';
import { agentStateFromParts, initialAgentState, type AgentUiState, type WireApproval, type WireClientCall } from 'cairn/ui';

// The project typechecks without the DOM library; the page needs only this of it.
declare const document: { getElementById(id: string): Parameters<typeof createRoot>[0] | null };
/** What the page reads of an input's change event. */
const valueOf = (event: { target: unknown }) => (event.target as { value: string }).value;

function App() {
  const chat = useChat<AgentUiState<string>>({
    api: '/api/agent',
    initialState: initialAgentState<string>(),
    reduce: agentStateFromParts<string>,
    reconnectDelayMs: 200,
  });
  const [prompt, setPrompt] = useState('Publish the release notes.');
  const { state } = chat;
  const busy = chat.status === 'streaming';

  return h('main', null,
    h('h1', null, 'Release notes agent'),
    h('form', {
      id: 'prompt-form',
      onSubmit: (event: { preventDefault(): void }) => {
        event.preventDefault();
        if (prompt.trim() !== '') void chat.send(prompt);
      },
    },
      h('input', { id: 'prompt', 'aria-label': 'Prompt', value: prompt, onChange: (e: { target: unknown }) => setPrompt(valueOf(e)) }),
      h('button', { id: 'send', type: 'submit', disabled: busy }, 'Send')),
    h('p', { id: 'status', 'data-chat': chat.status, 'data-run': state.status }, `run: ${state.status}, connection: ${chat.status}`),
    h('div', { id: 'parts' }, ...state.parts.map((part, i) => {
      if (part.type === 'tool') {
        return h('div', { key: i, className: 'part-tool', 'data-tool': part.toolName, 'data-state': part.state },
          `${part.toolName}: ${part.state}${part.outcome ? ` (${part.outcome})` : ''}`);
      }
      return h('p', { key: i, className: `part-${part.type}`, 'data-step': part.step }, part.text);
    })),
    state.status === 'suspended' && !busy
      ? h(Answers, {
        key: state.seq,
        approvals: state.pendingApprovals,
        calls: state.pendingClientCalls,
        onSend: (answers) => void chat.resume(answers),
      })
      : null,
    state.status === 'completed'
      ? h('div', { className: 'card' }, h('div', { className: 'output-label' }, 'Output'), h('p', { id: 'output' }, String(state.output)))
      : null,
    errorLine(chat.error, state),
    state.runId
      ? h('p', null, h('a', { id: 'chart-link', href: `/api/chart?runId=${encodeURIComponent(state.runId)}`, target: '_blank' }, 'See the stored run on its chart'))
      : null,
    h(RunPanel, { view: state.view, children: Object.values(state.childViews) }),
  );
}

interface AnswersProps {
  approvals: WireApproval[];
  calls: WireClientCall[];
  onSend(answers: {
    approvalResponses: { approvalId: string; token: string; approved: boolean }[];
    clientToolResults: { toolCallId: string; output: string }[];
  }): void;
}

/** Everything the suspended run waits for, answered together: the resume needs a verdict and a result for each. */
function Answers({ approvals, calls, onSend }: AnswersProps) {
  const [verdicts, setVerdicts] = useState<Record<string, boolean>>({});
  const [results, setResults] = useState<Record<string, string>>({});
  const ready = approvals.every((a) => a.approvalId in verdicts) && calls.every((c) => (results[c.toolCallId] ?? '').trim() !== '');
  const send = () => onSend({
    approvalResponses: approvals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: verdicts[a.approvalId] === true })),
    clientToolResults: calls.map((c) => ({ toolCallId: c.toolCallId, output: results[c.toolCallId]!.trim() })),
  });
  return h('section', { id: 'pending' },
    ...approvals.map((a) => h('div', { key: a.approvalId, className: 'card approval', 'data-tool': a.toolName },
      h('strong', null, `Approve ${a.toolName}?`), ' ', h('code', null, JSON.stringify(a.args)), ' ',
      verdictButton('approve', 'Approve', verdicts[a.approvalId] === true, () => setVerdicts({ ...verdicts, [a.approvalId]: true })),
      verdictButton('deny', 'Deny', verdicts[a.approvalId] === false, () => setVerdicts({ ...verdicts, [a.approvalId]: false })))),
    ...calls.map((c) => h('label', { key: c.toolCallId, className: 'card client-call', 'data-tool': c.toolName },
      h('strong', null, questionOf(c)), ' ',
      h('input', {
        className: 'client-answer', value: results[c.toolCallId] ?? '', placeholder: 'teal',
        onChange: (e: { target: unknown }) => setResults({ ...results, [c.toolCallId]: valueOf(e) }),
      }))),
    h('button', { id: 'submit-answers', disabled: !ready, onClick: send }, 'Send answers'),
  );
}

function verdictButton(kind: 'approve' | 'deny', label: string, pressed: boolean, onClick: () => void): ReactNode {
  return h('button', { key: kind, type: 'button', className: kind, 'aria-pressed': pressed, onClick }, label);
}

function questionOf(call: WireClientCall): string {
  const args = call.args as { question?: unknown } | null;
  return typeof args?.question === 'string' ? args.question : call.toolName;
}

function errorLine(requestError: string | null, state: AgentUiState<string>): ReactNode {
  const error = requestError ?? state.refusal?.message ?? state.error?.message;
  return error ? h('p', { id: 'error', role: 'alert' }, error) : null;
}

createRoot(document.getElementById('root')!).render(h(App));
