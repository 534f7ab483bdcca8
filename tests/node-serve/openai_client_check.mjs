// Drives a running `deltafin serve` with the official openai client and prints one JSON object
// describing what came back; tests/serve/test_serve_openai_client.cpp checks it.
//   node openai_client_check.mjs BASE_URL MODEL [API_KEY]
import OpenAI from 'openai';

const [baseURL, model, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: apiKey || 'unused', maxRetries: 0, timeout: 120000 });
const out = {};

const chatMessages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Name a colour.' },
];

// Chat, not streamed: greedy so the streamed run below must give the same text.
const chat = await client.chat.completions.create({
  model, messages: chatMessages, max_tokens: 12, temperature: 0, reasoning_effort: 'none',
});
out.chat = {
  object: chat.object, content: chat.choices[0].message.content, role: chat.choices[0].message.role,
  finish_reason: chat.choices[0].finish_reason, usage: chat.usage,
};

// Chat, streamed, with usage at the end.
const stream = await client.chat.completions.create({
  model, messages: chatMessages, max_tokens: 12, temperature: 0, reasoning_effort: 'none',
  stream: true, stream_options: { include_usage: true },
});
let content = '', chunks = 0, finish = null, usage = null, role = null;
for await (const chunk of stream) {
  chunks++;
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta.role) role = c.delta.role;
    if (c.delta.content) content += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
}
out.chat_stream = { content, chunks, finish_reason: finish, usage, role };

// Reasoning: thinking on, text comes back as reasoning_content.
const think = await client.chat.completions.create({
  model, messages: chatMessages, max_completion_tokens: 10, temperature: 0, reasoning_effort: 'low',
});
out.chat_reasoning = {
  reasoning_content: think.choices[0].message.reasoning_content ?? null,
  content: think.choices[0].message.content, usage: think.usage,
};

// Completions, not streamed and streamed, seeded sampling.
const comp = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 10, temperature: 0.8, seed: 7 });
out.completion = { object: comp.object, text: comp.choices[0].text, finish_reason: comp.choices[0].finish_reason, usage: comp.usage };
const cstream = await client.completions.create({
  model, prompt: 'Once upon a time', max_tokens: 10, temperature: 0.8, seed: 7, stream: true,
  stream_options: { include_usage: true },
});
let text = '', cfinish = null, cusage = null;
for await (const chunk of cstream) {
  if (chunk.usage) cusage = chunk.usage;
  for (const c of chunk.choices) {
    text += c.text;
    if (c.finish_reason) cfinish = c.finish_reason;
  }
}
out.completion_stream = { text, finish_reason: cfinish, usage: cusage };

// Models.
const models = await client.models.list();
out.models = models.data.map((m) => m.id);

// A refused field surfaces as the client's BadRequestError with the field named (K3 cannot be
// told which one tool to call).
try {
  await client.chat.completions.create({
    model, messages: chatMessages,
    tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
    tool_choice: { type: 'function', function: { name: 'f' } },
  });
  out.tools_error = null;
} catch (e) {
  out.tools_error = { status: e.status, param: e.param ?? e.error?.param ?? null, type: e.type ?? e.error?.type ?? null };
}
try {
  await client.chat.completions.create({ model: 'no-such-model', messages: chatMessages });
  out.model_error = null;
} catch (e) {
  out.model_error = { status: e.status, code: e.code ?? null };
}

process.stdout.write(JSON.stringify(out) + '\n');
