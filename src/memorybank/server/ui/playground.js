/* memorybank UI, the tool playground: call a memory tool exactly as the model would, and see
   what it answers (a save's outcome, or the facts a search found, with their scores). Built on
   app.js (window.memorybankUI); no network beyond this server. */
"use strict";

(function () {
  const ui = window.memorybankUI;  // app.js runs first (both are deferred, in this order)
  const { api, el, state } = ui;
  const $ = (sel, root) => (root || document).querySelector(sel);
  const SAVE_TOOL = /save|add|remember|memori[sz]e|store|create|insert|log/i;

  function toolInfo(t) {
    const f = t.function || t;
    return { name: f.name, description: f.description || "", parameters: f.parameters || f.input_schema || {} };
  }

  function example(schema) {
    if (!schema || typeof schema !== "object") return null;
    // Optional (nullable) arguments start as null: the model may leave them out.
    if (Array.isArray(schema.type) && schema.type.includes("null")) return null;
    if (schema.anyOf && schema.anyOf.some((s) => s.type === "null")) return null;
    if (schema.enum) return schema.enum[0];
    const type = schema.type;
    if (schema.anyOf) return example(schema.anyOf[0]);
    switch (type) {
      case "string": return "";
      case "integer": case "number": return schema.minimum ?? 0;
      case "boolean": return false;
      case "array": return [];
      case "object": {
        const out = {};
        const required = schema.required || Object.keys(schema.properties || {});
        for (const k of required) out[k] = example((schema.properties || {})[k]);
        return out;
      }
      default: return null;
    }
  }

  async function loadTools() {
    const profile = $("#pg-profile").value;
    const select = $("#pg-tool");
    const ticket = (state.toolsTicket = (state.toolsTicket || 0) + 1);
    select.replaceChildren();
    $("#pg-description").textContent = "Loading tools…";
    try {
      const data = await api("GET", "/api/tools/" + encodeURIComponent(profile) + "?format=openai");
      if (ticket !== state.toolsTicket) return; // the profile changed meanwhile
      state.tools = (data.tools || []).map(toolInfo);
      for (const t of state.tools) select.append(el("option", { value: t.name, text: t.name }));
      $("#pg-cost").textContent = data.token_cost ? "Tool definitions cost ≈ " + data.token_cost + " tokens" : "";
      showTool();
    } catch (e) {
      $("#pg-description").textContent = "Could not load tools: " + e.message;
    }
  }

  function showTool() {
    const t = state.tools.find((x) => x.name === $("#pg-tool").value);
    $("#pg-description").textContent = t ? t.description : "";
    $("#pg-args").value = JSON.stringify(t ? example(t.parameters) || {} : {}, null, 2);
  }

  $("#pg-profile").addEventListener("change", loadTools);
  $("#pg-tool").addEventListener("change", showTool);
  $("#pg-args").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      $("#pg-form").requestSubmit();
    }
  });

  // A tool call runs in a project when its conversation (thread) is in that project.
  async function playgroundThread(projectId) {
    state.threads = state.threads || {};
    if (!state.threads[projectId]) {
      const thread = await api("POST", "/api/threads", { project_id: projectId, title: "Tool playground" });
      state.threads[projectId] = thread.id;
    }
    return state.threads[projectId];
  }

  function labels(toolName) {
    return SAVE_TOOL.test(toolName)
      ? { running: "Saving to memory…", success: "Saved to memory", duplicate: "Already saved", error: "Failed to save" }
      : { running: "Calling " + toolName + "…", success: "Done", duplicate: "Already saved", error: "Failed" };
  }

  // What a tool's answer means: success, duplicate, or error (seed 000's UI states).
  function outcome(result) {
    if (typeof result === "string") {
      if (/^\s*(error|failed)\b/i.test(result)) return "error";
      if (/already (exists|saved|remembered)|nearly identical/i.test(result)) return "duplicate";
      return "success";
    }
    if (!result || typeof result !== "object") return "success";
    if (result.duplicate === true) return "duplicate";
    const said = [result.error, result.message].filter((x) => typeof x === "string").join(" ");
    if (/already (exists|saved|remembered)|nearly identical|similar memory/i.test(said)) return "duplicate";
    if (result.success === false || result.error) return "error";
    return "success";
  }

  // What a search tool found, whatever its profile calls it: the answer itself when it is a
  // list, else its first list of facts (facts, memories, results, hits …).
  const LIST_KEYS = ["facts", "memories", "results", "hits", "notes", "items", "data"];
  const TEXT_KEYS = ["fact", "content", "text", "memory", "summary"];
  const SCORE_KEYS = ["score", "relevance", "similarity"];

  function foundList(result) {
    if (Array.isArray(result)) return result;
    if (!result || typeof result !== "object") return null;
    const key = LIST_KEYS.find((k) => Array.isArray(result[k]));
    return key ? result[key] : null;
  }

  function first(obj, keys, type) {
    if (!obj || typeof obj !== "object") return undefined;
    const key = keys.find((k) => typeof obj[k] === type);
    return key === undefined ? undefined : { key, value: obj[key] };
  }

  // One found fact: its text, category and score (a hit may nest its memory).
  function foundFact(item) {
    if (typeof item !== "object" || item === null) return { text: String(item) };
    const inner = typeof item.memory === "object" && item.memory !== null ? item.memory : null;
    const text = first(item, TEXT_KEYS, "string") || first(inner, TEXT_KEYS, "string");
    const category = (inner && inner.category) || item.category;
    const score = first(item, SCORE_KEYS, "number");
    return { text: text ? text.value : JSON.stringify(item), category, score,
      relevance: typeof item.relevance === "number" && score && score.key !== "relevance" ? item.relevance : null };
  }

  function scoreText(f) {
    const parts = [];
    if (f.relevance !== null && f.relevance !== undefined) parts.push("relevance " + Math.round(f.relevance * 100) + " %");
    if (f.score) parts.push(f.score.key + " " + f.score.value.toFixed(2));
    return parts.join(" · ");
  }

  function renderFound(detail, list) {
    if (!list.length) {
      detail.append(el("p", { class: "hint" }, "Nothing found."));
      return;
    }
    const facts = list.map(foundFact);
    detail.append(el("ol", { class: "found", "aria-label": "Found facts" }, facts.map((f) =>
      el("li", { class: "found-fact" },
        el("span", { class: "content" }, f.text),
        f.category ? el("span", { class: "badge cat-" + f.category }, f.category) : null,
        f.score ? el("span", { class: "score", title: "How well it matches, as the tool answered it" }, scoreText(f))
          : null))));
    if (!facts.some((f) => f.score)) {
      detail.append(el("p", { class: "hint" }, "This tool answers without scores: its facts come best first."));
    }
  }

  // list: the facts a search tool found (null for any other answer).
  function renderToolResult(result, kind, list) {
    const detail = $("#pg-detail");
    detail.replaceChildren();
    if (typeof result === "string") {
      detail.append(el("pre", { class: "text-result" }, result));
      return;
    }
    if (list) {
      renderFound(detail, list);
      if (result.message) detail.append(el("p", { class: "hint" }, result.message));
      return;
    }
    if (!result || typeof result !== "object") return;
    const content = result.content || result.fact || result.existingContent;
    const category = result.category;
    if (content) {
      detail.append(el("p", {}, category ? el("span", { class: "badge cat-" + category }, category) : null,
        category ? " " : null, content));
    }
    const message = kind === "error" ? result.error || result.message : result.message;
    if (message) detail.append(el("p", { class: kind === "error" ? "status error" : "hint" }, message));
    if (kind === "duplicate" && result.existingContent && result.existingContent !== content) {
      detail.append(el("p", { class: "hint" }, "Existing: " + result.existingContent));
    }
  }

  // The card's title: a search says how many facts it found.
  function stateText(l, kind, list) {
    if (!list) return l[kind];
    return list.length ? "Found " + list.length + " fact" + (list.length === 1 ? "" : "s") : "Nothing found";
  }

  $("#pg-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = $("#pg-tool").value;
    const box = $("#pg-result");
    const l = labels(name);
    let args;
    try {
      args = JSON.parse($("#pg-args").value || "{}");
    } catch (e) {
      box.hidden = false;
      box.className = "card tool-result error";
      $("#pg-state").textContent = l.error;
      $("#pg-tool-name").textContent = name;
      $("#pg-detail").replaceChildren(el("p", { class: "status error" }, "The arguments are not valid JSON: " + e.message));
      $("#pg-raw").textContent = "";
      return;
    }
    box.hidden = false;
    box.className = "card tool-result running";
    box.setAttribute("aria-busy", "true");
    $("#pg-state").textContent = l.running;
    $("#pg-tool-name").textContent = name;
    $("#pg-detail").replaceChildren();
    $("#pg-raw").textContent = "";
    $("#pg-run").disabled = true;
    const body = { name, arguments: args };
    const project = $("#pg-project").value;
    try {
      if (project) body.thread_id = await playgroundThread(project);
      const data = await api("POST", "/api/tools/" + encodeURIComponent($("#pg-profile").value) + "/call", body);
      const result = data ? data.result : null;
      const kind = outcome(result);
      const list = kind === "success" && !SAVE_TOOL.test(name) ? foundList(result) : null;
      box.className = "card tool-result " + kind;
      $("#pg-state").textContent = stateText(l, kind, list);
      renderToolResult(result, kind, list);
      $("#pg-raw").textContent = typeof result === "string" ? result : JSON.stringify(result, null, 2);
      if (kind === "success" && SAVE_TOOL.test(name)) ui.loadMemory();
    } catch (e) {
      box.className = "card tool-result error";
      $("#pg-state").textContent = l.error;
      $("#pg-detail").replaceChildren(el("p", { class: "status error" }, e.message));
      $("#pg-raw").textContent = JSON.stringify(e.data || { error: e.message }, null, 2);
    } finally {
      box.removeAttribute("aria-busy");
      $("#pg-run").disabled = false;
    }
  });

  // ------------------------------------------------------------------ wiring

  document.addEventListener("memorybank:tab", (event) => {
    if (event.detail === "playground" && state.me && !state.tools.length) loadTools();
  });
  document.addEventListener("memorybank:ready", () => {
    const tab = ui.currentTab() || {};
    if (tab.tab === "playground") loadTools();
  });
})();
