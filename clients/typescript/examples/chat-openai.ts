// The README's chat with memory (tests/test_readme.py keeps the two the same); tsc checks it
// and test/client.test.ts runs it against the server and a scripted chat model.
import OpenAI from "openai";
import { MemoryBankClient, openAITools, runOpenAIToolCalls } from "../src/index.js";

const openai = new OpenAI();
const memory = new MemoryBankClient({
  baseUrl: process.env.MEMORYBANK_URL ?? "http://127.0.0.1:8000",
  apiKey: process.env.MEMORYBANK_API_KEY, // the user's key; none in local mode
});

export async function chat(messages: OpenAI.ChatCompletionMessageParam[]): Promise<string> {
  const tools = await openAITools(memory); // remember, recall, forget
  const system = await memory.systemPrompt({ budget: 500 }); // what is known already
  const history: OpenAI.ChatCompletionMessageParam[] = [{ role: "system", content: system }, ...messages];
  for (;;) {
    const reply = await openai.chat.completions.create({ model: "gpt-4o-mini", messages: history, tools });
    const message = reply.choices[0]!.message;
    history.push(message);
    if (!message.tool_calls?.length) return message.content ?? "";
    history.push(...(await runOpenAIToolCalls(memory, message.tool_calls))); // run by the server
  }
}
