/**
 * The servers the tests talk to: a real `memorybank serve` on a free port, in local mode, over
 * a database in a temporary folder (`MEMORYBANK_BIN` names the command, default the
 * repository's `.venv/bin/memorybank`), and a scripted chat model that answers OpenAI's
 * chat-completions API with the replies it is given, in order.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const BIN = process.env.MEMORYBANK_BIN ?? resolve(import.meta.dirname, "../../../../../.venv/bin/memorybank");

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once("error", fail);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => done(port));
    });
  });
}

export interface Running {
  baseUrl: string;
  stop: () => Promise<void>;
}

/** `memorybank serve`, answering on `/healthz`. */
export async function startMemorybank(): Promise<Running> {
  const home = mkdtempSync(join(tmpdir(), "memorybank-ts-"));
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const server = spawn(BIN, ["serve", "--port", String(port), "--db", `sqlite:///${join(home, "m.db")}`], {
    env: { ...process.env, MEMORYBANK_HOME: home, MEMORYBANK_AI_WRITE_RATE_PER_MINUTE: "100000" },
    stdio: "ignore",
  });
  const exited = new Promise<void>((done) => server.once("exit", () => done()));
  const deadline = Date.now() + 60_000;
  for (;;) {
    assert.equal(server.exitCode, null, `the server (${BIN}) exited on its own`);
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    assert.ok(Date.now() < deadline, "the server did not come up");
    await new Promise((done) => setTimeout(done, 100));
  }
  return {
    baseUrl,
    stop: async () => {
      if (server.exitCode === null) {
        server.kill();
        await exited;
      }
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** What the scripted model was sent: the chat-completions request bodies, in order. */
export interface ChatRequest {
  messages: { role: string; content?: unknown; tool_call_id?: string }[];
  tools?: { type: string; function: { name: string } }[];
}

export interface ScriptedModel extends Running {
  /** The assistant messages to answer with, one per request, in order. */
  script: (replies: Record<string, unknown>[]) => void;
  requests: ChatRequest[];
}

/** A chat model that answers `POST …/chat/completions` from a script (`baseUrl` ends in /v1). */
export async function startScriptedModel(): Promise<ScriptedModel> {
  let replies: Record<string, unknown>[] = [];
  const requests: ChatRequest[] = [];
  let answered = 0;
  const model = createHttpServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      requests.push(JSON.parse(body) as ChatRequest);
      const message = replies[answered++];
      response.setHeader("Content-Type", "application/json");
      if (!message) {
        response.statusCode = 500;
        response.end(JSON.stringify({ error: { message: "the script has no more replies" } }));
        return;
      }
      response.end(
        JSON.stringify({
          id: `chatcmpl-${answered}`,
          object: "chat.completion",
          created: 0,
          model: "gpt-4o-mini",
          choices: [{ index: 0, message, finish_reason: message.tool_calls ? "tool_calls" : "stop" }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      );
    });
  });
  await new Promise<void>((done) => model.listen(0, "127.0.0.1", done));
  const { port } = model.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (next) => {
      replies = next;
      answered = 0;
      requests.length = 0;
    },
    stop: () => new Promise<void>((done) => model.close(() => done())),
  };
}
