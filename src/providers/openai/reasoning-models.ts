/**
 * Which OpenAI models reason: the o-series, GPT-5 and later (but not the
 * `-chat` variants, which do not), and the codex models. Only the wire
 * depends on it — `developer` instead of `system` messages, and on the
 * Responses wire the encrypted reasoning that lets a stateless request carry
 * the model's thinking into the next step. Which sampling settings a model
 * refuses is the model profiles' business (cairn/headless `doctor`), not this.
 */
export function isReasoningModel(modelId: string): boolean {
  const id = modelId.toLowerCase();
  if (/^gpt-5(?:\.\d+)?-chat/.test(id)) return false;
  return /^o\d/.test(id) || /^gpt-(?:[5-9]|\d{2,})/.test(id) || id.startsWith('codex');
}
