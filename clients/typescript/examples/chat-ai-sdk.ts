// The READMEs' chat with memory on the Vercel AI SDK; tsc checks it and test/client.test.ts runs
// it against the server and a scripted chat model.
import { openai } from "@ai-sdk/openai";
import { generateText, jsonSchema, stepCountIs, type ModelMessage } from "ai";
import { aiSdkTools, MemoryBankClient } from "../src/index.js";

const memory = new MemoryBankClient({
  baseUrl: process.env.MEMORYBANK_URL ?? "http://127.0.0.1:8000",
  apiKey: process.env.MEMORYBANK_API_KEY, // the user's key; none in local mode
});

export async function chat(messages: ModelMessage[]): Promise<string> {
  const tools = await aiSdkTools(memory, { jsonSchema }); // remember, recall, forget
  const system = await memory.systemPrompt({ budget: 500 }); // what is known already
  const { text } = await generateText({
    model: openai.chat("gpt-4o-mini"),
    system,
    messages,
    tools, // run by the server when the model calls them
    stopWhen: stepCountIs(5), // up to 5 steps: tool calls, then the answer
  });
  return text;
}
