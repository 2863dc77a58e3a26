/**
 * The client against a real `memorybank serve` it starts on a free port, in local mode, over
 * a database in a temporary folder. `MEMORYBANK_BIN` names the command (default: the
 * repository's `.venv/bin/memorybank`).
 */

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";

import {
  aiSdkTools,
  MemoryBankClient,
  NotFound,
  openAITools,
  runOpenAIToolCalls,
  StoreError,
  ValidationError,
} from "../src/index.js";

const BIN = process.env.MEMORYBANK_BIN ?? resolve(import.meta.dirname, "../../../../.venv/bin/memorybank");

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once("error", fail);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => done(typeof address === "object" && address ? address.port : 0));
    });
  });
}

let server: ChildProcess;
let home: string;
let baseUrl: string;

before(async () => {
  home = mkdtempSync(join(tmpdir(), "memorybank-ts-"));
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  server = spawn(BIN, ["serve", "--port", String(port), "--db", `sqlite:///${join(home, "m.db")}`], {
    env: { ...process.env, MEMORYBANK_HOME: home, MEMORYBANK_AI_WRITE_RATE_PER_MINUTE: "100000" },
    stdio: "ignore",
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    assert.equal(server.exitCode, null, "the server exited on its own");
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    assert.ok(Date.now() < deadline, "the server did not come up");
    await new Promise((done) => setTimeout(done, 100));
  }
});

after(() => {
  server.kill();
  rmSync(home, { recursive: true, force: true });
});

describe("the memory API", () => {
  test("save, search, list, update, history, delete", async () => {
    const memory = new MemoryBankClient({ baseUrl, user: "alice" });
    assert.equal((await memory.me()).user_id, "alice");
    const saved = await memory.save("I prefer TypeScript for all my projects", { category: "preference" });
    assert.equal(saved.success, true);
    assert.equal(saved.content, "User prefers TypeScript for all their projects");
    const again = await memory.save("User prefers TypeScript for all their projects");
    assert.equal(again.duplicate, true);
    assert.equal(again.existing_id, saved.memory_id);

    const hits = await memory.search("which language should I use?", { limit: 3, category: ["preference"] });
    assert.equal(hits[0]?.memory.id, saved.memory_id);
    assert.ok((hits[0]?.score ?? 0) > 0);
    assert.equal((await memory.list({ limit: 10 })).count, 1);
    assert.equal(await memory.count({ category: ["identity"] }), 0);

    const id = saved.memory_id as string;
    const changed = await memory.update(id, { content: "User prefers Rust" });
    assert.equal(changed.id, id);
    const events = await memory.history(id);
    assert.deepEqual(events.map((e) => e.kind), ["ADD", "UPDATE"]);
    assert.equal((await memory.recent({ since: "7d" }))[0]?.content, "User prefers Rust");

    // Another user of the same server sees none of it.
    const bob = memory.forUser("bob");
    assert.deepEqual(await bob.search("language"), []);
    await assert.rejects(bob.get(id), NotFound);

    await memory.delete(id);
    await assert.rejects(memory.get(id), (error: unknown) => error instanceof NotFound && /no memory/.test(error.message));
  });

  test("export, import and clear", async () => {
    const carol = new MemoryBankClient({ baseUrl, user: "carol" });
    await carol.saveMany([
      { content: "User's sister Maria lives in Porto", category: "relationship", tags: ["family"] },
      { content: "User drinks green tea", category: "preference" },
    ]);
    const document = await carol.exportJson();
    assert.equal(document.count, 2);
    assert.match(await carol.exportMarkdown(), /## Relationship/);
    const dave = carol.forUser("dave");
    const imported = await dave.import(document);
    assert.deepEqual([imported.imported, imported.skipped], [2, 0]);
    assert.equal((await dave.import(document)).skipped, 2);
    assert.equal(await dave.clear(), 2);
    assert.equal(await dave.count(), 0);
  });

  test("errors are typed and say what to fix", async () => {
    const memory = new MemoryBankClient({ baseUrl, user: "erin" });
    await assert.rejects(memory.save("short", { category: "preference" }), (error: unknown) => {
      assert.ok(error instanceof ValidationError);
      assert.equal(error.field, "content");
      assert.equal(error.status, 422);
      return true;
    });
    const nowhere = new MemoryBankClient({ baseUrl: `http://127.0.0.1:${await freePort()}`, retries: 1, maxWait: 0.1 });
    await assert.rejects(nowhere.me(), StoreError);
  });
});

describe("tool calls", () => {
  test("OpenAI: definitions from the server, the model's calls run there", async () => {
    const memory = new MemoryBankClient({ baseUrl, user: "frank" });
    const tools = await openAITools(memory);
    assert.deepEqual(tools.map((t) => t.function.name).sort(), ["forget", "recall", "remember"]);
    assert.equal(tools[0]?.type, "function");
    const replies = await runOpenAIToolCalls(memory, [
      { id: "call_1", type: "function", function: { name: "remember", arguments: '{"fact": "I prefer dark mode", "category": "preference"}' } },
      { id: "call_2", type: "function", function: { name: "recall", arguments: '{"query": "theme"}' } },
      { id: "call_3", type: "function", function: { name: "remember", arguments: "{not json" } },
    ]);
    assert.deepEqual(replies.map((r) => [r.role, r.tool_call_id]), [["tool", "call_1"], ["tool", "call_2"], ["tool", "call_3"]]);
    assert.equal(JSON.parse(replies[0]?.content ?? "{}").success, true);
    assert.match(replies[1]?.content ?? "", /User prefers dark mode/);
    assert.equal(JSON.parse(replies[2]?.content ?? "{}").success, false);
    assert.match(await memory.systemPrompt({ budget: 1000 }), /User prefers dark mode/);
    await memory.save("User's sister Ana lives in Madrid", { category: "context", importance: 3 });
    const recalled = await memory.autoRecall("Where does my sister live?", { budget: 500 });
    assert.match(recalled, /Madrid/);
    // the deprecated name answers the same for one more release
    assert.equal(await memory.context("Where does my sister live?", { budget: 500 }), recalled);
  });

  test("Vercel AI SDK: tool() shapes that execute on the server", async () => {
    const memory = new MemoryBankClient({ baseUrl, user: "grace" });
    const wrapped: unknown[] = [];
    const tools = await aiSdkTools(memory, { jsonSchema: (schema) => (wrapped.push(schema), { jsonSchema: schema }) });
    assert.deepEqual(Object.keys(tools).sort(), ["forget", "recall", "remember"]);
    const remember = tools.remember;
    assert.ok(remember && remember.description && remember.inputSchema === remember.parameters);
    assert.equal(wrapped.length, 3);
    const result = (await remember.execute({ fact: "I live in Lisbon", category: "identity" })) as { success: boolean };
    assert.equal(result.success, true);
    const recalled = await tools.recall?.execute({ query: "where does the user live?" });
    assert.match(JSON.stringify(recalled), /Lisbon/);
  });
});

describe("the README's chat with memory", () => {
  test("runs the model's tool calls on the server and answers", async () => {
    const { createServer: createHttpServer } = await import("node:http");
    const requests: { messages: { role: string; content?: string }[] }[] = [];
    const replies = [
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_1",
            type: "function",
            function: { name: "remember", arguments: '{"fact": "I prefer green tea", "category": "preference"}' },
          },
        ],
      },
      { role: "assistant", content: "Noted: green tea it is." },
    ];
    const model = createHttpServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        requests.push(JSON.parse(body));
        const message = replies[requests.length - 1];
        response.setHeader("Content-Type", "application/json");
        response.end(
          JSON.stringify({
            id: `chatcmpl-${requests.length}`,
            object: "chat.completion",
            created: 0,
            model: "gpt-4o-mini",
            choices: [{ index: 0, message, finish_reason: message?.content ? "stop" : "tool_calls" }],
          }),
        );
      });
    });
    await new Promise<void>((done) => model.listen(0, "127.0.0.1", done));
    const address = model.address();
    const port = typeof address === "object" && address ? address.port : 0;
    process.env.OPENAI_BASE_URL = `http://127.0.0.1:${port}/v1`;
    process.env.OPENAI_API_KEY = "sk-test-not-a-secret";
    process.env.MEMORYBANK_URL = baseUrl;
    try {
      const { chat } = await import("../examples/chat-openai.js");
      const answer = await chat([{ role: "user", content: "I prefer green tea, remember that" }]);
      assert.equal(answer, "Noted: green tea it is.");
      assert.equal(requests[0]?.messages[0]?.role, "system"); // the memory block came first
      const toolMessage = requests[1]?.messages.find((m) => m.role === "tool");
      assert.equal(JSON.parse(toolMessage?.content ?? "{}").success, true);
      const local = new MemoryBankClient({ baseUrl });
      assert.equal((await local.search("what does the user drink?"))[0]?.memory.content, "User prefers green tea");
    } finally {
      model.close();
    }
  });
});
