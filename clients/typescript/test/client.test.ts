/**
 * The client against a real `memorybank serve` it starts on a free port (test/servers.ts), and
 * the two chat examples (examples/) against that server and a scripted chat model.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import {
  aiSdkTools,
  MemoryBankClient,
  MemoryBankError,
  RateLimited,
  NotFound,
  openAITools,
  runOpenAIToolCalls,
  StoreError,
  ValidationError,
} from "../src/index.js";
import { freePort, startMemorybank, startScriptedModel, type Running, type ScriptedModel } from "./servers.js";

let server: Running;
let baseUrl: string;
let model: ScriptedModel;

before(async () => {
  server = await startMemorybank();
  baseUrl = server.baseUrl;
  // The examples read these when they are first imported (both SDKs read OPENAI_BASE_URL).
  model = await startScriptedModel();
  process.env.OPENAI_BASE_URL = model.baseUrl;
  process.env.OPENAI_API_KEY = "sk-test-not-a-secret";
  process.env.MEMORYBANK_URL = baseUrl;
});

after(async () => {
  await model?.stop();
  await server?.stop();
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

  test("restore a replaced fact; the events the caller may see", async () => {
    const memory = new MemoryBankClient({ baseUrl, user: "rita" });
    const old = await memory.save("User lives in Oslo", { category: "identity" });
    // The shipped judge retires nothing unasked: the caller says this save replaces.
    const moved = await memory.save("User moved to Bergen", { category: "identity", on_conflict: "supersede" });
    assert.deepEqual(moved.replaced?.map((r) => r.memory_id), [old.memory_id]);
    const back = await memory.restore(old.memory_id as string);
    assert.equal(back.superseded_by, null);
    assert.equal((await memory.list({ superseded: false })).count, 2);
    const events = await memory.events();
    assert.deepEqual(events.map((e) => e.type), ["created", "superseded", "created", "updated"]);
    const first = events[0]?.id ?? 0;
    assert.deepEqual((await memory.events({ after: first, limit: 1 })).map((e) => e.type), ["superseded"]);
    assert.deepEqual((await memory.events({ types: ["updated"] })).map((e) => e.memory_id), [old.memory_id]);
    assert.deepEqual(await memory.forUser("sam").events(), []);
  });

  test("supersede one fact by another, delete several at once", async () => {
    const memory = new MemoryBankClient({ baseUrl, user: "vera" });
    const old = (await memory.save("User lives in Leeds", { category: "identity" })).memory_id as string;
    const newer = (await memory.save("User moved to York", { category: "identity", on_conflict: "keep" }))
      .memory_id as string;
    assert.equal((await memory.supersede(old, newer)).superseded_by, newer);
    assert.deepEqual((await memory.list({ superseded: false })).memories.map((m) => m.id), [newer]);
    const theirs = (await memory.forUser("walt").save("User collects stamps from Peru")).memory_id as string;
    assert.deepEqual((await memory.deleteMany([old, theirs, newer])).sort(), [old, newer].sort());
    assert.equal(await memory.count(), 0);
    assert.equal(await memory.forUser("walt").count(), 1);
    assert.deepEqual(await memory.deleteMany([]), []);
  });

  test("a pair a save asked about, answered both are true", async () => {
    const memory = new MemoryBankClient({ baseUrl, user: "yuki" });
    const old = (await memory.save("User works at Globex as an engineer", { category: "identity" }))
      .memory_id as string;
    const newer = (await memory.save("User works at Initech as an engineer", { category: "identity" }))
      .memory_id as string;
    const pairs = await memory.openPairs();
    assert.deepEqual(pairs.map((p) => [p.memory.id, p.other.id]), [[newer, old]]);
    const answered = await memory.keepBoth(newer, old);
    assert.equal(answered.other.id, old);
    assert.deepEqual(await memory.openPairs(), []);
    assert.equal((await memory.list({ superseded: false })).count, 2);
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

/** A server on 127.0.0.1 answering every request with `answer`; the requests it received. */
async function answering(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  const seen: { method?: string; url?: string; headers: IncomingMessage["headers"]; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      answer(req, res);
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, stop: () => new Promise<void>((done) => server.close(() => done())) };
}

describe("hostile answers (issue 34)", () => {
  test("a redirect to another origin is not followed: nothing is re-sent there", async () => {
    const elsewhere = await answering((_req, res) => res.writeHead(200, { "Content-Type": "application/json" }).end("{}"));
    const redirector = await answering((_req, res) => res.writeHead(307, { Location: `${elsewhere.url}/api/memories` }).end());
    try {
      const memory = new MemoryBankClient({ baseUrl: redirector.url, apiKey: "mb_secret", user: "alice" });
      await assert.rejects(memory.save("User prefers green tea"), (error: unknown) => {
        assert.ok(error instanceof MemoryBankError);
        assert.match(error.message, /follows no redirects/);
        return true;
      });
      assert.equal(redirector.seen.length, 1);
      assert.deepEqual(elsewhere.seen, []);
    } finally {
      await redirector.stop();
      await elsewhere.stop();
    }
  });

  test("a Retry-After that is not whole seconds is ignored", async () => {
    for (const header of ["", "-5", "0x10", "1e3", "nan"]) {
      const limited = await answering((_req, res) =>
        res.writeHead(429, { "Retry-After": header, "Content-Type": "application/json" }).end('{"error": "slow down"}'),
      );
      try {
        const memory = new MemoryBankClient({ baseUrl: limited.url, retries: 1, maxWait: 0.2 });
        await assert.rejects(memory.count(), (error: unknown) => error instanceof RateLimited && error.retryAfter === 1);
      } finally {
        await limited.stop();
      }
    }
  });

  test("'.' and '..' are refused as ids, never resolved as path segments", async () => {
    const memory = new MemoryBankClient({ baseUrl, user: "frank" });
    const kept = (await memory.save("User prefers green tea")).memory_id as string;
    for (const bad of ["", ".", ".."]) {
      await assert.rejects(async () => memory.clear(bad), ValidationError);
      await assert.rejects(async () => memory.get(bad), ValidationError);
      await assert.rejects(async () => memory.delete(bad), ValidationError);
    }
    assert.equal((await memory.get(kept)).content, "User prefers green tea");
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
  });

  test("Vercel AI SDK: tools in tool()'s shape that execute on the server", async () => {
    const { jsonSchema, tool } = await import("ai");
    const memory = new MemoryBankClient({ baseUrl, user: "grace" });
    const tools = await aiSdkTools(memory, { jsonSchema });
    assert.deepEqual(Object.keys(tools).sort(), ["forget", "recall", "remember"]);
    const remember = tools.remember!;
    assert.equal(tool(remember), remember); // tool() only types it
    assert.ok(remember.description);
    // the AI SDK's schema holds the server's JSON schema, which is what the model is shown
    const definition = (await openAITools(memory)).find((t) => t.function.name === "remember");
    assert.deepEqual(await remember.inputSchema.jsonSchema, definition?.function.parameters);
    const result = (await remember.execute({ fact: "I live in Lisbon", category: "identity" })) as { success: boolean };
    assert.equal(result.success, true);
    const recalled = await tools.recall?.execute({ query: "where does the user live?" });
    assert.match(JSON.stringify(recalled), /Lisbon/);
    // what the server refuses is an answer for the model, never a throw: a bad fact (its
    // answer says so), input that is not an object (a 422 answer)
    const refused = (await remember.execute({ fact: "x" })) as { success: boolean; error: string };
    assert.equal(refused.success, false);
    const invalid = (await remember.execute(42)) as { success: boolean; error: string };
    assert.equal(invalid.success, false);
    assert.ok(invalid.error);
  });
});

describe("the READMEs' chats with memory", () => {
  test("OpenAI Node SDK: runs the model's tool calls on the server and answers", async () => {
    const remember = {
      role: "assistant",
      content: null,
      tool_calls: [
        {
          id: "call_1",
          type: "function",
          function: { name: "remember", arguments: '{"fact": "I prefer green tea", "category": "preference"}' },
        },
      ],
    };
    model.script([remember, { role: "assistant", content: "Noted: green tea it is." }]);
    const { chat } = await import("../examples/chat-openai.js");
    const answer = await chat([{ role: "user", content: "I prefer green tea, remember that" }]);
    assert.equal(answer, "Noted: green tea it is.");
    assert.equal(model.requests[0]?.messages[0]?.role, "system"); // the memory block came first
    const toolMessage = model.requests[1]?.messages.find((m) => m.role === "tool");
    assert.equal(JSON.parse(String(toolMessage?.content ?? "{}")).success, true);
    const local = new MemoryBankClient({ baseUrl });
    assert.equal((await local.search("what does the user drink?"))[0]?.memory.content, "User prefers green tea");
  });

  test("Vercel AI SDK: the tools run on the server between the model's steps", async () => {
    const local = new MemoryBankClient({ baseUrl });
    await local.save("User works as a nurse in Porto", { category: "identity", importance: 4 });
    const recall = {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_2", type: "function", function: { name: "recall", arguments: '{"query": "job"}' } }],
    };
    model.script([recall, { role: "assistant", content: "You are a nurse." }]);
    const { chat } = await import("../examples/chat-ai-sdk.js");
    const answer = await chat([{ role: "user", content: "What is my job?" }]);
    assert.equal(answer, "You are a nurse.");
    const [first, second] = model.requests;
    assert.deepEqual(first?.tools?.map((t) => t.function.name).sort(), ["forget", "recall", "remember"]);
    assert.equal(first?.messages[0]?.role, "system");
    assert.match(String(first?.messages[0]?.content), /nurse in Porto/); // what is known already
    const toolMessage = second?.messages.find((m) => m.role === "tool");
    assert.equal(toolMessage?.tool_call_id, "call_2");
    assert.match(String(toolMessage?.content), /nurse in Porto/); // recalled by the server
  });
});
