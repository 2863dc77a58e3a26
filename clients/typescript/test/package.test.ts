/**
 * The package as an app gets it: `npm pack`'s tarball, installed (offline: it has no runtime
 * dependency) into a CommonJS project and an ES module project in a temporary folder, which
 * `require()` / `import` it and call a real `memorybank serve`. The ES module project also
 * compiles every TypeScript block of clients/typescript/README.md and of the root README's
 * TypeScript section with `tsc --strict --noEmit`, against the `ai`, `@ai-sdk/openai` and
 * `openai` of this package's lockfile.
 */

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";

import { startMemorybank, type Running } from "./servers.js";

const PACKAGE = resolve(import.meta.dirname, "../../.."); // clients/typescript
const READMES = [
  { label: "clients-typescript-README", path: join(PACKAGE, "README.md"), section: null },
  { label: "root-README", path: resolve(PACKAGE, "../../README.md"), section: "## TypeScript client" },
];
/** What the README blocks import besides the client, linked from this package's node_modules. */
const LINKED = ["ai", "@ai-sdk/openai", "openai", "@types/node"];
const TSC = join(PACKAGE, "node_modules/typescript/bin/tsc");

let server: Running;
let work: string;
let tarball: string;

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const done = spawnSync(command, args, { cwd, env: { ...process.env, ...env }, encoding: "utf8" });
  return { status: done.status, output: `${done.stdout ?? ""}${done.stderr ?? ""}` };
}

/** A project of an app's own, with the packed client installed from the tarball, offline. */
function project(name: string, manifest: Record<string, unknown>): string {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, version: "1.0.0", private: true, ...manifest }));
  const install = run(
    "npm",
    ["install", tarball, "--offline", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
    dir,
  );
  assert.equal(install.status, 0, install.output);
  return dir;
}

function link(dir: string, name: string): void {
  const target = join(PACKAGE, "node_modules", name);
  assert.ok(existsSync(target), `${name} is not installed here (npm ci)`);
  mkdirSync(dirname(join(dir, "node_modules", name)), { recursive: true });
  symlinkSync(target, join(dir, "node_modules", name), "dir");
}

/** `tsc --strict --noEmit` over a project; the files it read (`--listFiles`). */
function typecheck(dir: string, compilerOptions: Record<string, unknown>, include: string[]): string {
  const config = { compilerOptions: { target: "ES2022", skipLibCheck: true, ...compilerOptions }, include };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(config, null, 2));
  const tsc = run(process.execPath, [TSC, "-p", dir, "--strict", "--noEmit", "--listFiles"], dir);
  const errors = tsc.output.split("\n").filter((line) => line && !line.startsWith("/")); // not --listFiles
  assert.equal(tsc.status, 0, `tsc --strict --noEmit failed:\n${errors.join("\n")}`);
  return tsc.output;
}

interface Block {
  lang: string;
  code: string;
  line: number;
}

/** The fenced blocks of a markdown file (or of its section that starts with `section`). */
function blocks(path: string, section: string | null): Block[] {
  const text = readFileSync(path, "utf8");
  let start = 0;
  let end = text.length;
  if (section !== null) {
    start = text.indexOf(`\n${section}\n`);
    assert.ok(start >= 0, `${path} has no "${section}" section`);
    const next = text.indexOf("\n## ", start + section.length + 2);
    end = next < 0 ? text.length : next;
  }
  const found: Block[] = [];
  for (const match of text.slice(start, end).matchAll(/^```(\w+)\n(.*?)^```$/gms)) {
    const line = text.slice(0, start + (match.index ?? 0)).split("\n").length + 1;
    found.push({ lang: match[1] ?? "", code: match[2] ?? "", line });
  }
  return found;
}

const isTypeScript = (block: Block) => block.lang === "ts" || block.lang === "typescript";

before(async () => {
  server = await startMemorybank();
  work = mkdtempSync(join(tmpdir(), "memorybank-ts-package-"));
  assert.ok(existsSync(join(PACKAGE, "dist/esm/index.js")) && existsSync(join(PACKAGE, "dist/cjs/index.js")), "npm run build first");
  // The build is npm test's first step; `npm pack` alone would run it again (prepack).
  const packed = execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", work], {
    cwd: PACKAGE,
    encoding: "utf8",
  });
  const [{ filename, files }] = JSON.parse(packed) as [{ filename: string; files: { path: string }[] }];
  tarball = join(work, filename);
  const paths = files.map((f) => f.path);
  for (const needed of ["package.json", "README.md", "dist/esm/index.js", "dist/esm/index.d.ts", "dist/cjs/index.js", "dist/cjs/index.d.ts", "dist/cjs/package.json"]) {
    assert.ok(paths.includes(needed), `the tarball has no ${needed}`);
  }
  assert.ok(!paths.some((p) => p.startsWith("src/") || p.startsWith("dist/dev/")), "sources and tests are not packed");
});

after(async () => {
  await server?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** What both consumer scripts print: a save, a search, and a typed error, from the server. */
function consumerScript(loader: string): string {
  return `${loader}
async function main() {
  const memory = new MemoryBankClient({ baseUrl: process.env.MEMORYBANK_URL, user: process.env.WHO });
  const saved = await memory.save("I keep my notes in plain text files", { category: "preference" });
  const hits = await memory.search("where are the notes kept?");
  await memory.delete(saved.memory_id);
  const error = await memory.get(saved.memory_id).catch((e) => e);
  console.log(JSON.stringify({
    saved: saved.content,
    found: hits[0] && hits[0].memory.content,
    notFound: error instanceof NotFound && error instanceof MemoryBankError,
    name: error.name,
  }));
}
`;
}

const EXPECTED = {
  saved: "User keeps their notes in plain text files",
  found: "User keeps their notes in plain text files",
  notFound: true,
  name: "NotFound",
};

describe("installed from npm pack's tarball", () => {
  test("require() in a CommonJS project (a default `npm init` one)", () => {
    const dir = project("cjs-app", {}); // no "type": CommonJS, as npm init writes it
    const script = consumerScript('const { MemoryBankClient, MemoryBankError, NotFound } = require("memorybank-client");');
    writeFileSync(join(dir, "index.js"), `${script}main().catch((error) => { console.error(error); process.exit(1); });\n`);
    const ran = run(process.execPath, ["index.js"], dir, { MEMORYBANK_URL: server.baseUrl, WHO: "cjs" });
    assert.equal(ran.status, 0, ran.output);
    assert.deepEqual(JSON.parse(ran.output), EXPECTED);

    // The client README's CommonJS blocks run as written.
    const readme = blocks(join(PACKAGE, "README.md"), null).filter((b) => b.lang === "js" && b.code.includes("require("));
    assert.ok(readme.length >= 1, "the client README shows require()");
    for (const block of readme) {
      writeFileSync(join(dir, "readme.js"), block.code);
      const shown = run(process.execPath, ["readme.js"], dir, { MEMORYBANK_URL: server.baseUrl });
      assert.equal(shown.status, 0, `README.md line ${block.line}:\n${shown.output}`);
    }

    // TypeScript in a CommonJS project reads the CommonJS types (the "require" condition).
    writeFileSync(
      join(dir, "typed.ts"),
      `import { MemoryBankClient, NotFound, type SearchHit } from "memorybank-client";
const memory = new MemoryBankClient({ baseUrl: "http://127.0.0.1:8000" });
export async function best(query: string): Promise<SearchHit | undefined> {
  return (await memory.search(query, { limit: 1 }))[0];
}
export const missing = (error: unknown): boolean => error instanceof NotFound;
`,
    );
    const read = typecheck(dir, { module: "NodeNext", moduleResolution: "NodeNext", types: [] }, ["typed.ts"]);
    assert.match(read, /node_modules\/memorybank-client\/dist\/cjs\/index\.d\.ts/);
    assert.doesNotMatch(read, /dist\/esm\//);
  });

  test("import in an ES module project, and the READMEs' TypeScript compiles there", (t) => {
    const dir = project("esm-app", { type: "module" });
    const script = consumerScript('import { MemoryBankClient, MemoryBankError, NotFound } from "memorybank-client";');
    writeFileSync(join(dir, "index.js"), `${script}await main();\n`);
    const ran = run(process.execPath, ["index.js"], dir, { MEMORYBANK_URL: server.baseUrl, WHO: "esm" });
    assert.equal(ran.status, 0, ran.output);
    assert.deepEqual(JSON.parse(ran.output), EXPECTED);

    // Every TypeScript block of both READMEs, as a module of its own, in an app that has the
    // client from the tarball and the SDKs the blocks import.
    for (const name of LINKED) link(dir, name);
    mkdirSync(join(dir, "snippets"));
    const shown = READMES.map((readme) => ({ ...readme, blocks: blocks(readme.path, readme.section).filter(isTypeScript) }));
    for (const readme of shown) {
      assert.ok(readme.blocks.length >= 2, `${readme.path} shows fewer than 2 TypeScript blocks`);
      for (const block of readme.blocks) {
        writeFileSync(join(dir, "snippets", `${readme.label}-line-${block.line}.ts`), `${block.code}export {};\n`);
      }
    }
    const read = typecheck(dir, { module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2022"], types: ["node"] }, [
      "snippets",
    ]);
    assert.match(read, /node_modules\/memorybank-client\/dist\/esm\/index\.d\.ts/);

    // Each example that the client tests run is shown as it is (but for the import path).
    for (const example of readdirSync(join(PACKAGE, "examples")).filter((f) => f.endsWith(".ts"))) {
      const code = readFileSync(join(PACKAGE, "examples", example), "utf8")
        .split("\n")
        .filter((line) => !line.startsWith("//"))
        .join("\n")
        .replaceAll('"../src/index.js"', '"memorybank-client"');
      for (const readme of shown) {
        assert.ok(
          readme.blocks.some((block) => block.code === code),
          `${readme.path} does not show examples/${example} as it is`,
        );
      }
    }
    const ai = JSON.parse(readFileSync(join(PACKAGE, "node_modules/ai/package.json"), "utf8")) as { version: string };
    t.diagnostic(`the README blocks compiled against ai ${ai.version}`);
  });
});
