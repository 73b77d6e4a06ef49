/**
 * cairn/react: useChat, its framework-free ChatController, and RunPanel.
 * Browser-safe: nothing here imports Node.
 */
export { useChat, type UseChatResult } from './use-chat.js';
export {
  ChatController, readSse, type ChatClientResult, type ChatControllerOptions, type ChatSnapshot, type ChatVerdict,
  type CursorStorage, type FrameReducer, type WireFrame,
} from './chat-controller.js';
export { RunPanel, type RunPanelProps } from './run-panel.js';
export type { AgentRunView } from '../agent/run-view.js';
