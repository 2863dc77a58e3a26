/**
 * Memory tools for a chat model, fetched from the server (one source of truth: the profile's
 * definitions, descriptions and JSON schemas) and run there, shaped for the two SDKs the apps
 * use: the OpenAI Node SDK (`tools` and `role: "tool"` messages) and the Vercel AI SDK
 * (`tool({description, inputSchema, execute})`). No dependency on either.
 */

import type { MemoryBankClient } from "./client.js";

export interface ToolOptions {
  /** The tool profile (default `default`: remember, recall, forget). */
  profile?: string;
  /** A conversation: the tools offered there (none when its memory is off), in its project. */
  threadId?: string;
}

/** An OpenAI chat-completions tool, as the server exports it (strict JSON schema). */
export interface OpenAITool {
  type: "function";
  function: { name: string; description?: string; parameters: Record<string, unknown>; strict?: boolean };
}

/** The part of an OpenAI tool call the helpers read (`message.tool_calls[i]`); a call of
 * another kind (a custom tool, with no `function`) is answered as not a memory tool. */
export interface OpenAIToolCall {
  id: string;
  type?: string;
  function?: { name: string; arguments: string };
}

/** The message that answers one tool call. */
export interface OpenAIToolMessage {
  role: "tool";
  tool_call_id: string;
  content: string;
}

/** The profile's tools for `client.chat.completions.create({tools})`. */
export async function openAITools(client: MemoryBankClient, options: ToolOptions = {}): Promise<OpenAITool[]> {
  const answer = await client.toolDefinitions(options.profile ?? "default", {
    format: "openai",
    threadId: options.threadId,
  });
  return answer.tools as unknown as OpenAITool[];
}

/** Run the tool calls of an assistant message; the `role: "tool"` messages to send back.
 * A call the server refuses (a bad argument, memory off) is answered as an error the model
 * can read, so the conversation goes on. */
export async function runOpenAIToolCalls(
  client: MemoryBankClient,
  toolCalls: readonly OpenAIToolCall[] | null | undefined,
  options: ToolOptions = {},
): Promise<OpenAIToolMessage[]> {
  const profile = options.profile ?? "default";
  const answers: OpenAIToolMessage[] = [];
  for (const call of toolCalls ?? []) {
    let result: unknown;
    try {
      result = call.function
        ? await client.callTool(profile, call.function.name, call.function.arguments, options.threadId)
        : { success: false, error: `tool call ${call.id} is not a memory tool call (no function)` };
    } catch (error) {
      result = { success: false, error: error instanceof Error ? error.message : String(error) };
    }
    answers.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify(result) });
  }
  return answers;
}

/** One tool in the Vercel AI SDK's shape: pass it to `tool()` (v5 reads `inputSchema`, v4
 * `parameters`; both hold the same schema, wrapped by `jsonSchema` when you give it). */
export interface AISdkTool {
  description?: string;
  inputSchema: unknown;
  parameters: unknown;
  execute: (args: Record<string, unknown>) => Promise<unknown>;
}

/** The profile's tools for the Vercel AI SDK, keyed by name:
 * `tools: mapValues(await aiSdkTools(memory, { jsonSchema }), tool)`. */
export async function aiSdkTools(
  client: MemoryBankClient,
  options: ToolOptions & { jsonSchema?: (schema: Record<string, unknown>) => unknown } = {},
): Promise<Record<string, AISdkTool>> {
  const profile = options.profile ?? "default";
  const tools = await openAITools(client, options);
  const wrap = options.jsonSchema ?? ((schema: Record<string, unknown>) => schema);
  const entries = tools.map((t): [string, AISdkTool] => {
    const schema = wrap(t.function.parameters);
    return [
      t.function.name,
      {
        description: t.function.description,
        inputSchema: schema,
        parameters: schema,
        execute: (args) => client.callTool(profile, t.function.name, args, options.threadId),
      },
    ];
  });
  return Object.fromEntries(entries);
}
