// Drives a `deltafin serve` whose engine is scripted (tests/serve/test_serve_scripted.cpp) with the
// official openai client: a tool-call round trip (tools -> tool_calls -> tool results -> answer),
// streamed and not, with logprobs, and a response_format request. Prints one JSON object.
//   node openai_tools_check.mjs BASE_URL MODEL API_KEY
import OpenAI from 'openai';

const [baseURL, model, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather', description: 'Weather',
      parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'number' } } },
    },
  },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } } },
];
const question = { role: 'user', content: 'What is the weather in Paris?' };

// Collects a streamed answer the way agents do: text, reasoning, tool calls by index, logprobs.
async function collect(stream) {
  let content = '', reasoning = '', finish = null;
  const calls = [], logprobs = [];
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      if (c.delta.content) content += c.delta.content;
      if (c.delta.reasoning_content) reasoning += c.delta.reasoning_content;
      for (const tc of c.delta.tool_calls ?? []) {
        calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
        if (tc.id) calls[tc.index].id = tc.id;
        if (tc.function?.name) calls[tc.index].function.name += tc.function.name;
        if (tc.function?.arguments) calls[tc.index].function.arguments += tc.function.arguments;
      }
      for (const lp of c.logprobs?.content ?? []) logprobs.push(lp);
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { message: { role: 'assistant', content, reasoning_content: reasoning, tool_calls: calls }, finish, logprobs };
}

async function roundTrip(stream) {
  const ask = async (messages) => {
    const req = { model, messages, tools, temperature: 0, max_tokens: 300, logprobs: true, top_logprobs: 2 };
    if (!stream) {
      const r = await client.chat.completions.create(req);
      return { message: r.choices[0].message, finish: r.choices[0].finish_reason, logprobs: r.choices[0].logprobs?.content ?? [] };
    }
    return collect(await client.chat.completions.create({ ...req, stream: true }));
  };
  const first = await ask([question]);
  const calls = first.message.tool_calls ?? [];
  // Results sent back in reverse order: tool_call_id pairs them with their calls.
  const results = [...calls].reverse().map((c) => ({
    role: 'tool', tool_call_id: c.id, content: c.function.name === 'get_time' ? '14:05' : '21C, sunny',
  }));
  const second = await ask([question, first.message, ...results]);
  const lps = second.logprobs;
  return {
    first_finish: first.finish,
    reasoning: first.message.reasoning_content ?? null,
    calls: calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
    answer: second.message.content,
    final_finish: second.finish,
    logprob_tokens: lps.length,
    logprobs_ok: lps.length > 0 && lps.every((e) => e.logprob <= 0 && e.top_logprobs.length === 2)
      && lps.map((e) => e.token).join('') === second.message.content,
  };
}

const out = { plain: await roundTrip(false), stream: await roundTrip(true) };
const json = await client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'Reply in JSON' }], response_format: { type: 'json_object' },
  reasoning_effort: 'none', temperature: 0,
});
out.json_mode = JSON.parse(json.choices[0].message.content);
process.stdout.write(JSON.stringify(out) + '\n');
