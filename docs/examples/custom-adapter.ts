// A model adapter of your own: the Cairn model spec over a small JSON API, with
// the helpers cairn/models gives adapter writers (the POST, its typed errors, keys).
import { runAgent } from 'cairn/agent';
import {
  loadApiKey, postJson, readJson, rememberKey,
  type FetchFunction, type LanguageModel, type ModelRequest, type ModelResponse,
} from 'cairn/models';

function createEchoModel(settings: { apiKey?: string; baseURL: string; fetch?: FetchFunction }): LanguageModel {
  rememberKey(settings.apiKey); // redacted from every message from now on
  const url = `${settings.baseURL}/complete`;
  return {
    specificationVersion: 'cairn-model-1',
    provider: 'echo',
    modelId: 'echo-1',
    keyStatus: (env) => ({ present: Boolean(settings.apiKey ?? env.ECHO_API_KEY), envVars: ['ECHO_API_KEY'] }),
    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      const key = loadApiKey({ apiKey: settings.apiKey, envVars: ['ECHO_API_KEY'], provider: 'echo' });
      const response = await postJson({
        provider: 'echo', url, fetch: settings.fetch, signal: request.signal,
        headers: { authorization: `Bearer ${key}` },
        body: { prompt: request.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n') },
        errorMessage: (body) => (body as { error?: string }).error,
      });
      const answer = (await readJson(response, { provider: 'echo', url })) as { text: string; tokens: number };
      return {
        text: answer.text,
        toolCalls: [],
        finishReason: 'stop',
        usage: { inputTokens: answer.tokens, outputTokens: answer.tokens, totalTokens: 2 * answer.tokens },
      };
    },
  };
}

// A stand-in for the API: it echoes the prompt back, and answers 503 once.
let calls = 0;
const fakeFetch: FetchFunction = async (_url, init) => {
  if (++calls === 1) return Response.json({ error: 'warming up' }, { status: 503, headers: { 'retry-after-ms': '10' } });
  const { prompt } = JSON.parse(String(init?.body)) as { prompt: string };
  return Response.json({ text: `You said: ${prompt}`, tokens: 3 });
};

const model = createEchoModel({ apiKey: 'echo-secret-123', baseURL: 'https://echo.example', fetch: fakeFetch });
const result = await runAgent({ model, prompt: 'hello' });
// The 503 was retried (after the 10 ms the API asked for) by the engine, not by the adapter.
console.log(result.status, result.text, `(${calls} requests)`); // completed You said: hello (2 requests)
