/**
 * Memory tools for a chat model, fetched from the server (one source of truth: the profile's
 * definitions, descriptions and JSON schemas) and run there, shaped for the two SDKs the apps
 * use: the OpenAI Node SDK (`tools` and `role: "tool"` messages) and the Vercel AI SDK 5 or
 * later (`tool({description, inputSchema, execute})`). No dependency on either: the types are
 * structural, and the AI SDK's `jsonSchema` is passed in.
 */

import type { MemoryBankClient } from "./client.js";

export interface ToolOptions {
  /** The tool profile (default `default`: remember, recall, forget). */
  profile?: string;
  /** A conversation: the tools offered there (none when its memory is off), in its project. */
  thread_id?: string;
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

/** One call run by the server; what it refuses, or an error on the way, is an answer too. */
async function runTool(
  client: MemoryBankClient,
  profile: string,
  name: string,
  args: string | Record<string, unknown>,
  threadId: string | undefined,
): Promise<unknown> {
  try {
    return await client.callTool(profile, name, args, threadId);
  } catch (error) {
    return { success: false, error: error instanceof Error ? error.message : String(error) };
  }
}

/** The profile's tools for `client.chat.completions.create({tools})`. */
export async function openAITools(client: MemoryBankClient, options: ToolOptions = {}): Promise<OpenAITool[]> {
  const answer = await client.toolDefinitions(options.profile ?? "default", {
    format: "openai",
    thread_id: options.thread_id,
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
    const result = call.function
      ? await runTool(client, profile, call.function.name, call.function.arguments, options.thread_id)
      : { success: false, error: `tool call ${call.id} is not a memory tool call (no function)` };
    answers.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify(result) });
  }
  return answers;
}

/** A tool's input, as the server describes it: a JSON schema object (draft 7). */
export type JSONSchemaObject = Record<string, unknown>;

/** How {@link aiSdkTools} builds the tools: {@link ToolOptions} and the AI SDK's `jsonSchema`. */
export interface AISdkToolOptions<Schema> extends ToolOptions {
  /** `jsonSchema` from `ai` (AI SDK 5 or later): wraps each tool's JSON schema in the AI SDK's
   * `Schema`, which `tool()`, `generateText` and `streamText` read. Passed in, so that this
   * package does not depend on `ai`. */
  jsonSchema: (schema: JSONSchemaObject) => Schema;
}

/** One memory tool in the Vercel AI SDK's shape (`tool({description, inputSchema, execute})`):
 * a `ToolSet` entry as it is, or the argument of `tool()`. `Schema` is what `jsonSchema`
 * returned (`Schema<unknown>` with the AI SDK's). */
export interface AISdkTool<Schema = unknown> {
  description?: string;
  inputSchema: Schema;
  /** Runs the call on the server; never throws: a refusal (bad input, memory off) or an
   * error on the way comes back as `{success: false, error}` for the model to read. */
  execute: (input: unknown) => Promise<unknown>;
}

/** The profile's tools for the Vercel AI SDK (5 or later), keyed by name, ready for
 * `generateText({tools})` or `streamText({tools})`:
 * `const tools = await aiSdkTools(memory, { jsonSchema })` with `jsonSchema` from `ai`. */
export async function aiSdkTools<Schema>(
  client: MemoryBankClient,
  options: AISdkToolOptions<Schema>,
): Promise<Record<string, AISdkTool<Schema>>> {
  const profile = options.profile ?? "default";
  const tools = await openAITools(client, options);
  const entries = tools.map((t): [string, AISdkTool<Schema>] => {
    const { name, description, parameters } = t.function;
    const execute = (input: unknown) =>
      runTool(client, profile, name, input as Record<string, unknown>, options.thread_id);
    const inputSchema = options.jsonSchema(parameters);
    return [name, description === undefined ? { inputSchema, execute } : { description, inputSchema, execute }];
  });
  return Object.fromEntries(entries);
}
