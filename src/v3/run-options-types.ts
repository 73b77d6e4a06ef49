/**
 * The option types of a V3 leg: today's options with `checkpointVersion: 3`
 * and a session on an AgentRunStoreV3 (which is not an AgentRunStore: it
 * keeps version 3 records only).
 */
import type { AgentOptions, AgentSession, ResumeOptions } from '../agent/options-types.js';
import type { AgentRunStoreV3 } from './store-types.js';

export interface AgentSessionV3 extends Omit<AgentSession, 'store'> {
  store: AgentRunStoreV3;
}

export type AgentOptionsV3<T = string> = Omit<AgentOptions<T>, 'session' | 'checkpointVersion'> & {
  checkpointVersion: 3;
  session: AgentSessionV3;
};

export type ResumeOptionsV3<T = string> = Omit<ResumeOptions<T>, 'session' | 'checkpointVersion'> & {
  checkpointVersion: 3;
  session: AgentSessionV3;
};
