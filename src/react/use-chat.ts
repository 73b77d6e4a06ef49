/**
 * useChat: the React face of {@link ChatController}. One controller per
 * component instance; the component re-renders on every folded frame.
 */
import { useEffect, useState, useSyncExternalStore } from 'react';
import {
  ChatController, type ChatClientResult, type ChatControllerOptions, type ChatSnapshot, type ChatVerdict,
} from './chat-controller.js';

export interface UseChatResult<S> extends ChatSnapshot<S> {
  /** Starts a run with a prompt. */
  send(prompt: string): Promise<void>;
  /** Sends every verdict and client result of the suspension, with the run id, in one request. */
  resume(answers: { approvalResponses?: ChatVerdict[]; clientToolResults?: ChatClientResult[] }): Promise<void>;
  /** Stops reading; the run goes on on the server. */
  stop(): void;
}

/**
 * Drives a native agent route from a component. After a reload it reconnects
 * from the cursor it saved (sessionStorage by default).
 *
 * @example
 * const chat = useChat({ api: '/api/agent', initialState, reduce: agentStateFromParts });
 * return createElement('button', { onClick: () => chat.send('Publish the notes.') }, 'Go');
 */
export function useChat<S>(options: ChatControllerOptions<S>): UseChatResult<S> {
  const [controller] = useState(() => new ChatController<S>(options));
  const snapshot = useSyncExternalStore(
    (listener) => controller.subscribe(listener),
    () => controller.snapshot,
    () => controller.snapshot,
  );
  useEffect(() => {
    if (controller.hasSavedRun && controller.snapshot.status === 'idle') void controller.reconnect();
    return () => controller.stop();
  }, [controller]);
  return {
    ...snapshot,
    send: (prompt) => controller.send(prompt),
    resume: (answers) => controller.resume(answers),
    stop: () => controller.stop(),
  };
}
