/* memorybank UI: plain JavaScript, no build step, no network beyond this server's /api. */
"use strict";

(function () {
  const KEY_STORAGE = "memorybank.apiKey";
  // Local mode only: the user the UI acts for (the server's X-Memorybank-User header).
  const USER_STORAGE = "memorybank.user";
  const CATEGORIES = ["identity", "preference", "relationship", "project", "context"];
  const SOURCE_LABELS = {
    ai: "AI", api: "App", user: "You", import: "Imported", conversation: "Conversation",
  };
  const SOURCE_TITLES = {
    ai: "Saved by an assistant's tool call (source “ai”)",
    api: "Sent by an app over the REST API (source “api”, the API's default)",
    user: "Typed by you (source “user”)",
    import: "Imported from an export",
    conversation: "Said in a conversation, kept as it was said",
  };

  const $ = (sel, root) => (root || document).querySelector(sel);
  const state = {
    me: null,
    memoryRole: null,
    wsRole: null,
    plan: null,
    tools: [],
    settings: null,
    showWeaker: false,
    // Facts a save said may update another (its conflicts), as the server keeps them until
    // someone answers (GET /api/memory-pairs): new id → [{memory_id, content}], shown under
    // the new fact.
    pairs: {},
    pairTexts: {},
    // Pairs answered "Replace" on this page: new id → [older], shown with Undo (any reload,
    // a live event's included, keeps the line).
    replacedPairs: {},
    actingAs: null,
  };

  // ------------------------------------------------------------------ helpers

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function apiKey() {
    try { return localStorage.getItem(KEY_STORAGE) || ""; } catch (e) { return ""; }
  }

  function actingUser() {
    try { return localStorage.getItem(USER_STORAGE) || ""; } catch (e) { return ""; }
  }

  class ApiError extends Error {
    constructor(message, status, data) {
      super(message);
      this.status = status;
      this.data = data || {};
    }
  }

  async function request(method, path, body) {
    const headers = { Accept: "application/json" };
    const key = apiKey();
    if (key) headers.Authorization = "Bearer " + key;
    const user = actingUser();  // ignored by a server with accounts
    if (user && !key) headers["X-Memorybank-User"] = encodeURIComponent(user);
    const init = { method, headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (e) {
      throw new ApiError("Could not reach the server: " + e.message, 0);
    }
    return response;
  }

  async function api(method, path, body) {
    const response = await request(method, path, body);
    if (response.status === 204) return null;
    const text = await response.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch (e) { data = { error: text }; }
    }
    if (!response.ok) {
      let message = (data && (data.error || data.detail)) || response.statusText || "request failed";
      if (typeof message !== "string") message = JSON.stringify(message);
      throw new ApiError(message, response.status, data);
    }
    return data;
  }

  function setStatus(node, text, kind) {
    node.textContent = text || "";
    if (node.classList.contains("held")) node.title = text || "";  // the whole of a clamped line
    node.classList.toggle("error", kind === "error");
    node.classList.toggle("ok", kind === "ok");
  }

  function banner(text) {
    const node = $("#banner");
    node.textContent = text || "";
    node.hidden = !text;
  }

  function fmtTime(value) {
    if (!value) return "";
    const d = new Date(value);
    if (isNaN(d)) return String(value);
    return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  }

  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  function confirmDialog(title, text, okLabel) {
    const dialog = $("#confirm-dialog");
    $("#confirm-title").textContent = title;
    $("#confirm-text").textContent = text;
    $("#confirm-yes").textContent = okLabel || "Delete";
    return new Promise((resolve) => {
      const done = () => {
        dialog.removeEventListener("close", done);
        resolve(dialog.returnValue === "ok");
      };
      dialog.returnValue = "";
      dialog.addEventListener("close", done);
      dialog.showModal();
      $("#confirm-no").focus();
    });
  }

  function projectName(id) {
    const p = ((state.me && state.me.projects) || []).find((x) => x.id === id);
    return p ? p.name || p.id : id;
  }

  function canManage(role) {
    return role === "admin" || role === "owner";
  }

  function fillCategories() {
    document.querySelectorAll("select.category-select").forEach((select) => {
      for (const c of CATEGORIES) select.append(el("option", { value: c, text: c }));
    });
  }

  async function download(path, fallbackName) {
    const response = await request("GET", path);
    if (!response.ok) {
      let message = response.statusText;
      try { message = (await response.json()).error || message; } catch (e) { /* not JSON */ }
      throw new ApiError(message, response.status);
    }
    const blob = await response.blob();
    let name = fallbackName;
    const disposition = response.headers.get("Content-Disposition") || "";
    const match = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition);
    if (match) name = decodeURIComponent(match[1]);
    const url = URL.createObjectURL(blob);
    const a = el("a", { href: url, download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    return name;
  }

  // ------------------------------------------------------------------ tabs

  const tabs = Array.from(document.querySelectorAll('[role="tab"]'));

  function selectTab(name, focus) {
    for (const tab of tabs) {
      const on = tab.dataset.tab === name;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
      $("#" + tab.getAttribute("aria-controls")).hidden = !on;
      if (on && focus) tab.focus();
    }
    if (location.hash !== "#" + name) history.replaceState(null, "", "#" + name);
    if (name === "workspace") loadWorkspace();
    document.dispatchEvent(new CustomEvent("memorybank:tab", { detail: name }));
  }

  // Links to a page (href="#workspace") select its tab.
  window.addEventListener("hashchange", () => {
    const name = location.hash.slice(1);
    if (tabs.some((t) => t.dataset.tab === name)) selectTab(name);
  });

  tabs.forEach((tab, i) => {
    tab.addEventListener("click", () => selectTab(tab.dataset.tab));
    tab.addEventListener("keydown", (event) => {
      let j = null;
      if (event.key === "ArrowRight") j = (i + 1) % tabs.length;
      else if (event.key === "ArrowLeft") j = (i - 1 + tabs.length) % tabs.length;
      else if (event.key === "Home") j = 0;
      else if (event.key === "End") j = tabs.length - 1;
      if (j !== null) {
        event.preventDefault();
        selectTab(tabs[j].dataset.tab, true);
      }
    });
  });

  // ------------------------------------------------------------------ identity / key

  async function loadMe() {
    banner("");
    try {
      state.me = await api("GET", "/api/me");
    } catch (e) {
      state.me = null;
      if (e.status === 422 && actingUser() && !apiKey()) return refusedUser(e);
      $("#key-form").hidden = false;
      $("#whoami").textContent = "";
      if (e.status === 401 || e.status === 403) {
        banner(apiKey() ? "That API key was not accepted: " + e.message
                        : "Enter your API key to see your memory.");
        $("#api-key").focus();
      } else {
        banner("Could not load your account: " + e.message);
      }
      clearViews();
      return false;
    }
    const me = state.me;
    $("#key-form").hidden = me.mode === "local";
    $("#user-form").hidden = me.mode !== "local";
    $("#acting-user").value = me.mode === "local" ? me.user_id : "";
    $("#whoami").textContent = "Signed in as " + (me.name || me.user_id) +
      (me.mode === "local" ? " · local mode" : "");
    $("#whoami").title = $("#whoami").textContent;  // cut to one line on a phone
    fillProjects();
    return true;
  }

  // A user id the server refuses (one stored by an older page): back to the user "local",
  // saying why.
  async function refusedUser(e) {
    const user = actingUser();
    try { localStorage.removeItem(USER_STORAGE); } catch (err) { /* storage disabled */ }
    const ok = await loadMe();
    setStatus($("#user-status"), "The server refused the user “" + user + "”: " + e.message +
      ". Back to the user local.", "error");
    return ok;
  }

  function clearViews() {
    $("#memory-list").replaceChildren();
    $("#ws-list").replaceChildren();
    $("#memory-count").textContent = "";
  }

  function fillProjects() {
    const projects = (state.me && state.me.projects) || [];
    for (const id of ["#ws-project", "#forget-scope", "#tidy-scope", "#pg-project"]) {
      const select = $(id);
      const keep = select.value;
      select.querySelectorAll("option[data-project]").forEach((o) => o.remove());
      for (const p of projects) {
        select.append(el("option", { value: p.id, "data-project": "1",
          text: (p.name || p.id) + (id === "#ws-project" ? " (" + p.role + ")" : "") }));
      }
      if (keep && projects.some((p) => p.id === keep)) select.value = keep;
    }
  }

  $("#key-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = $("#api-key").value.trim();
    try {
      if (key) localStorage.setItem(KEY_STORAGE, key);
      else localStorage.removeItem(KEY_STORAGE);
    } catch (e) { /* storage disabled: the key lasts for this page only */ }
    $("#api-key").value = "";
    $("#api-key").placeholder = key ? "key saved" : "mb_…";
    state.threads = {};
    await start();
  });

  // The server's rule for the user a local-mode request acts for (X-Memorybank-User, in
  // server/principals.py): after trimming, 1–200 characters, none of them a control character.
  // Empty means the user "local".
  const USER_ID_MAX = 200;
  const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

  function userIdProblem(user) {
    if (CONTROL_CHARACTER.test(user)) {
      return "it holds a control character (a tab or a line break, say), and a user id is " +
        "1–200 characters with none of them";
    }
    if (Array.from(user).length > USER_ID_MAX) return "it is longer than 200 characters";
    return null;
  }

  $("#acting-user").addEventListener("input", () => {
    $("#acting-user").removeAttribute("aria-invalid");
    setStatus($("#user-status"), "");
  });

  $("#user-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = $("#acting-user");
    const user = input.value.trim();
    const problem = userIdProblem(user);
    if (problem) {
      input.setAttribute("aria-invalid", "true");
      setStatus($("#user-status"), "Not switched: this is not a user id: " + problem + ".", "error");
      input.focus();
      return;
    }
    input.removeAttribute("aria-invalid");
    try {
      if (user && user !== "local") localStorage.setItem(USER_STORAGE, user);
      else localStorage.removeItem(USER_STORAGE);
    } catch (e) { /* storage disabled: the UI stays with the user "local" */ }
    state.tools = [];
    state.threads = {};
    state.actingAs = null;
    setStatus($("#user-status"), "");
    await start();
    if (state.me && state.me.mode === "local") sayWhoThisIs(state.me.user_id);
  });

  // After a switch: a user with no facts may be a typo, since any id is accepted (a new user
  // simply starts empty), so say so.
  function sayWhoThisIs(user) {
    state.actingAs = null;
    if (state.memoryCount === null || state.memoryCount === undefined || user === "local") return;
    if (state.memoryCount > 0) {
      state.actingAs = user;  // the count in this line follows adds and deletes (loadMemory)
      setStatus($("#user-status"), "Now acting as “" + user + "” (" + plural(state.memoryCount, "fact") + ").", "ok");
      return;
    }
    setStatus($("#user-status"), "“" + user + "” has no facts yet. User ids are exact (“Alice” is not " +
      "“alice”): if you meant a user the CLI or your app saved, check the spelling; otherwise the " +
      "first fact you add starts this user's memory.", "error");
  }

  $("#key-clear").addEventListener("click", async () => {
    try { localStorage.removeItem(KEY_STORAGE); } catch (e) { /* ignore */ }
    $("#api-key").placeholder = "mb_…";
    state.tools = [];
    state.threads = {};
    await start();
  });

  // ------------------------------------------------------------------ memory cards

  // Importance as stored, and as it ranks now once decay has lowered it (not yet recalled
  // or saved again for a while).
  function importanceBadge(m) {
    const now = m.effective_importance;
    const faded = typeof now === "number" && now < m.importance - 0.05;
    const text = "Importance " + m.importance + (faded ? " (now " + now.toFixed(1) + ")" : "");
    const title = faded
      ? "Ranks lower until it is recalled or saved again"
      : "Importance, 1–10";
    return el("span", { class: "importance" + (faded ? " faded" : ""), title }, text);
  }

  // How well a search hit matches: its calibrated relevance (the chance that it answers the
  // search) and the score the results are ordered by (relevance weighed with importance and
  // recency).
  function scoreBadge(hit) {
    const r = hit.relevance;
    const pct = r > 0 && r < 0.005 ? "< 1 %" : Math.round(r * 100) + " %";
    return el("span", { class: "score", title: "Relevance: the chance that this fact answers your " +
      "search. Score: what orders the results (relevance, weighed with importance and recency)." },
      "Relevance " + pct + " · score " + hit.score.toFixed(2));
  }

  // hit: the search hit the card shows (with its scores), if the card is one.
  function memoryCard(m, opts, hit) {
    const source = String(m.source || "ai").toLowerCase();
    const meta = el("div", { class: "meta" },
      hit ? scoreBadge(hit) : null,
      el("span", { class: "badge cat-" + m.category, title: "Category" }, m.category),
      el("span", { class: "source src-" + source, title: SOURCE_TITLES[source] || "Source" },
        SOURCE_LABELS[source] || source),
      importanceBadge(m));
    if (opts.showAuthor) {
      const by = m.created_by || m.user_id;
      const mine = state.me && by === state.me.user_id;
      meta.append(el("span", {}, "Added by ", el("span", { class: "by" }, mine ? "you" : by || "unknown")));
    }
    meta.append(el("span", {}, "Added ",
      el("time", { datetime: m.created_at, title: m.created_at }, fmtTime(m.created_at))));
    if (m.updated_at && m.updated_at !== m.created_at) {
      meta.append(el("span", {}, "· Edited ",
        el("time", { datetime: m.updated_at, title: m.updated_at }, fmtTime(m.updated_at))));
    }
    const newer = opts === memOpts ? newerOf(m.id) : null;
    if (newer) {
      meta.prepend(el("span", { class: "outdated", title: "A newer fact may update this one: " +
        newer.content + " (answer it there: Replace or Both are true)" }, "May be outdated"));
    }
    const li = el("li", { class: "memory", "data-id": m.id },
      el("p", { class: "content" }, m.content), meta);
    if (opts === memOpts) {
      for (const older of state.pairs[m.id] || []) li.append(pairBlock(m, older));
      for (const older of state.replacedPairs[m.id] || []) li.append(pairBlock(m, older, true));
    }
    if (opts.manage) {
      const short = m.content.length > 40 ? m.content.slice(0, 40) + "…" : m.content;
      li.append(el("div", { class: "ops" },
        el("button", { type: "button", class: "small edit", "aria-label": "Edit: " + short,
          onclick: () => startEdit(li, m, opts) }, "Edit"),
        el("button", { type: "button", class: "small danger delete", "aria-label": "Delete: " + short,
          onclick: () => deleteOne(m, opts) }, "Delete")));
    }
    return li;
  }

  // The newer fact of an open pair whose older one is ``id`` (the first, if several), if any.
  function newerOf(id) {
    for (const [newerId, olders] of Object.entries(state.pairs)) {
      if (olders.some((o) => o.memory_id === id)) {
        return { id: newerId, content: state.pairTexts[newerId] || "" };
      }
    }
    return null;
  }

  // A fact that may update an older one: both, and the two answers. "Replace" marks the older
  // one replaced by the newer (kept in history; Undo restores it); "Both are true" keeps both
  // and stops asking.
  function pairBlock(m, older, replacedAlready) {
    const box = el("div", { class: "pair", role: "group", "aria-label": "May update another fact" });
    const ask = () => box.replaceChildren(
      el("p", { class: "pair-text" }, "May update: ", el("q", { class: "older" }, older.content)),
      el("div", { class: "pair-ops" },
        el("button", { type: "button", class: "small primary", onclick: () => replace() }, "Replace"),
        el("button", { type: "button", class: "small", onclick: () => bothTrue() }, "Both are true")));
    const forget = () => {
      state.pairs[m.id] = (state.pairs[m.id] || []).filter((c) => c.memory_id !== older.memory_id);
    };
    async function replace() {
      try {
        await api("POST", "/api/memories/" + encodeURIComponent(older.memory_id) + "/supersede",
          { by: m.id });
      } catch (e) {
        setStatus(memOpts.status, "Could not replace: " + e.message, "error");
        return;
      }
      forget();
      state.replacedPairs[m.id] = [...(state.replacedPairs[m.id] || []), older];
      await loadMemory();
      const again = document.querySelector('#memory-list .memory[data-id="' + CSS.escape(m.id) +
        '"] .pair button');
      if (again) again.focus();
    }
    const showReplaced = () => box.replaceChildren(
      el("p", { class: "pair-text" }, "Replaced: ", el("q", { class: "older" }, older.content)),
      el("div", { class: "pair-ops" },
        el("button", { type: "button", class: "small", onclick: () => undo() }, "Undo")));
    async function undo() {
      try {
        await api("POST", "/api/memories/" + encodeURIComponent(older.memory_id) + "/restore");
      } catch (e) {
        setStatus(memOpts.status, "Could not undo: " + e.message, "error");
        return;
      }
      state.replacedPairs[m.id] = (state.replacedPairs[m.id] || [])
        .filter((c) => c.memory_id !== older.memory_id);
      state.pairs[m.id] = [...(state.pairs[m.id] || []), older];
      await loadMemory();
    }
    // Recorded on the server, so no browser asks again, and the memory block never shows
    // the older as an earlier, maybe outdated value of the newer.
    async function bothTrue() {
      try {
        await api("POST", "/api/memories/" + encodeURIComponent(m.id) + "/keep-both",
          { other: older.memory_id });
      } catch (e) {
        setStatus(memOpts.status, "Could not keep both: " + e.message, "error");
        return;
      }
      forget();
      setStatus(memOpts.status, "Kept both: " + m.content + " · " + older.content, "ok");
      box.remove();
      const mark = document.querySelector('#memory-list .memory[data-id="' +
        CSS.escape(older.memory_id) + '"] .outdated');
      if (mark && !newerOf(older.memory_id)) mark.remove();
    }
    if (replacedAlready) showReplaced(); else ask();
    return box;
  }

  function startEdit(li, m, opts) {
    if (li.querySelector("form.edit")) return;
    const input = el("input", { class: "edit-content", name: "content", value: m.content,
      "aria-label": "Fact text", required: true });
    const select = el("select", { class: "edit-category", name: "category", "aria-label": "Category" },
      CATEGORIES.map((c) => el("option", { value: c, text: c })));
    select.value = m.category;
    const status = el("span", { class: "status", role: "status" });
    const form = el("form", { class: "edit", "aria-label": "Edit fact" },
      el("div", { class: "field grow" }, input), select,
      el("button", { type: "submit", class: "primary small save" }, "Save"),
      el("button", { type: "button", class: "small cancel", onclick: () => { form.remove(); showCard(li, true); } },
        "Cancel"),
      status);
    form.addEventListener("keydown", (event) => {
      if (event.key === "Escape") { form.remove(); showCard(li, true); li.querySelector("button.edit").focus(); }
    });
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const body = {};
      if (input.value.trim() !== m.content) body.content = input.value.trim();
      if (select.value !== m.category) body.category = select.value;
      if (!Object.keys(body).length) { form.remove(); showCard(li, true); return; }
      const q = opts.projectId ? "?project_id=" + encodeURIComponent(opts.projectId) : "";
      try {
        await api("PATCH", "/api/memories/" + encodeURIComponent(m.id) + q, body);
        setStatus(opts.status, "Saved your change.", "ok");
        form.remove();  // the edit is done: the reload renders the list with the change
        await opts.reload();
      } catch (e) {
        setStatus(status, "Could not save: " + e.message, "error");
      }
    });
    showCard(li, false);
    li.append(form);
    input.focus();
  }

  function showCard(li, visible) {
    for (const part of li.querySelectorAll(".content, .meta, .ops")) part.hidden = !visible;
  }

  async function deleteOne(m, opts) {
    const ok = await confirmDialog("Delete this fact?", "“" + m.content + "” will be forgotten.", "Delete");
    if (!ok) return;
    const path = opts.projectId
      ? "/api/memory/drive/" + encodeURIComponent(m.id)
      : "/api/memory/user/" + encodeURIComponent(m.id);
    try {
      await api("DELETE", path);
      setStatus(opts.status, "Deleted: " + m.content, "ok");
      await opts.reload();
    } catch (e) {
      setStatus(opts.status, "Could not delete: " + e.message, "error");
    }
  }

  // ------------------------------------------------------------------ your memory

  const memOpts = {
    manage: true,
    showAuthor: false,
    projectId: null,
    get status() { return $("#memory-status"); },
    reload: () => loadMemory(),
  };

  // The page of facts: the newest (in a category, if one is chosen), or with a search the best
  // matches as hits with their scores.
  async function fetchMemories(q, category) {
    const params = new URLSearchParams({ limit: "200" });
    if (category) params.set("category", category);
    if (!q) {
      const data = await api("GET", "/api/memory/user?" + params);
      return { memories: data.memories, count: data.count, hits: null };
    }
    params.set("q", q);
    params.set("scopes", "user");
    const data = await api("GET", "/api/search?" + params);
    return { memories: data.hits.map((h) => h.memory), count: data.hits.length, hits: data.hits };
  }

  // The open pairs of the private memory (a fact a save said may update another, not yet
  // answered): newer id → [{memory_id, content}] of the older ones.
  async function fetchPairs() {
    const data = await api("GET", "/api/memory-pairs?scopes=user");
    const pairs = {};
    const texts = {};  // newer id → its text, for the mark on the older fact
    for (const p of data.pairs) {
      (pairs[p.memory.id] = pairs[p.memory.id] || []).push({ memory_id: p.other.id, content: p.other.content });
      texts[p.memory.id] = p.memory.content;
    }
    return { pairs, texts };
  }

  // The relevance a search match needs to be listed before "Show weaker matches": the
  // server's (auto-recall's default, the memory block's cut-off), read once. Until it is read
  // the same number is used: a failed read must not list every weak match (it listed "5
  // matches" with 1 % and 12 % among them).
  const SEARCH_MIN_RELEVANCE = 0.15;  // rules/ranking.RECALL_MIN_RELEVANCE (a test checks)
  async function searchMinRelevance() {
    if (state.settings === null) {
      try {
        state.settings = await api("GET", "/ui/settings.json");
      } catch (e) {
        return SEARCH_MIN_RELEVANCE;  // asked again next time
      }
    }
    return state.settings.search_min_relevance;
  }

  // Run ``fn`` once no fact of ``list`` is being edited (checked every 300 ms, no request).
  function afterEditing(list, fn) {
    const check = () => ($(list + " form.edit") ? setTimeout(check, 300) : fn());
    setTimeout(check, 300);
  }

  async function loadMemory() {
    if (!state.me) return;
    const q = $("#search-q").value.trim();
    const category = $("#search-category").value;
    // Answers can come back out of order (a reload after a save, then a search): only the
    // newest request may render, or a stale list replaces the one being edited.
    const asked = (state.memoryAsked = (state.memoryAsked || 0) + 1);
    try {
      const [data, pairs] = await Promise.all([fetchMemories(q, category), fetchPairs()]);
      const cut = data.hits ? await searchMinRelevance() : 0;
      if (asked !== state.memoryAsked) return;
      // An answer that arrives while a fact is being edited would replace the card and throw
      // away what is being typed: the list is loaded again once the edit is saved or cancelled.
      if ($("#memory-list form.edit")) {
        afterEditing("#memory-list", loadMemory);
        return;
      }
      state.pairs = pairs.pairs;
      state.pairTexts = pairs.texts;
      const strong = data.hits ? data.hits.filter((h) => h.relevance >= cut).length : data.memories.length;
      const weaker = data.memories.length - strong;  // hits come best first: the weak ones last
      const shown = state.showWeaker ? data.memories.length : strong;
      const list = $("#memory-list");
      list.replaceChildren(...data.memories.slice(0, shown)
        .map((m, i) => memoryCard(m, memOpts, data.hits && data.hits[i])));
      const filtered = q || category;
      state.memoryCount = filtered ? null : data.count;
      $("#memory-empty").hidden = shown > 0;
      $("#memory-empty").textContent = !filtered
        ? "No facts yet. Add one above, or chat with the assistant."
        : weaker ? "No fact matches this search well." : "No facts match this search.";
      showWeakerToggle(weaker);
      $("#memory-count").textContent = filtered
        ? strong + (strong === 1 ? " match" : " matches") +
          (weaker ? " · " + weaker + " weaker" + (state.showWeaker ? "" : " hidden") : "")
        : plural(data.count, "fact");
      $("#memory-count").title = $("#memory-count").textContent;
      $("#clear-all").disabled = !filtered && data.count === 0;
      if (!filtered && state.actingAs && state.me.mode === "local") sayWhoThisIs(state.actingAs);
    } catch (e) {
      setStatus($("#memory-status"), "Could not load your memory: " + e.message, "error");
    }
  }

  function showWeakerToggle(weaker) {
    const toggle = $("#weaker-toggle");
    toggle.hidden = !weaker;
    toggle.setAttribute("aria-expanded", state.showWeaker ? "true" : "false");
    toggle.textContent = state.showWeaker
      ? "Hide weaker matches"
      : "Show " + weaker + " weaker " + (weaker === 1 ? "match" : "matches");
  }

  $("#weaker-toggle").addEventListener("click", () => {
    state.showWeaker = !state.showWeaker;
    loadMemory();
  });

  $("#search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setStatus($("#memory-status"), "");
    state.showWeaker = false;  // a new search starts with its good matches only
    loadMemory();
  });
  $("#search-category").addEventListener("change", () => loadMemory());

  async function addFact(path, input, select, status, reload) {
    const fact = input.value.trim();
    if (!fact) { input.focus(); return; }
    const body = { fact };
    if (select.value) body.category = select.value;
    try {
      const data = await api("POST", path, body);
      input.value = "";
      const replaced = ((data && data.replaced) || []).map((c) => c.content);
      setStatus(status, "Saved: " + ((data && data.memory && data.memory.content) || fact) +
        (replaced.length ? ". Replaced: " + replaced.join("; ") : ""), "ok");
      await reload();
    } catch (e) {
      if (e.data && e.data.duplicate) {
        const existing = e.data.existing && e.data.existing.content;
        setStatus(status, "Already saved" + (existing ? ": " + existing : "."), "error");
      } else {
        setStatus(status, "Could not save: " + e.message, "error");
      }
    }
    input.focus();
  }

  $("#add-form").addEventListener("submit", (event) => {
    event.preventDefault();
    addFact("/api/memory/user", $("#add-fact"), $("#add-category"), $("#memory-status"), loadMemory);
  });

  async function clearAll(path, label, status, reload) {
    let pending;
    try {
      pending = await api("POST", path);
    } catch (e) {
      setStatus(status, "Could not clear: " + e.message, "error");
      return;
    }
    if (!pending.count) { setStatus(status, "There is nothing to delete."); return; }
    const ok = await confirmDialog("Delete all " + plural(pending.count, "fact") + "?",
      "Every fact in " + label + " will be deleted. This cannot be undone.",
      "Delete all " + pending.count);
    if (!ok) { setStatus(status, "Nothing was deleted."); return; }
    try {
      const done = await api("POST", path, { confirm_token: pending.confirm_token });
      setStatus(status, "Deleted " + plural(done.deleted, "fact") + ".", "ok");
      await reload();
    } catch (e) {
      setStatus(status, "Could not clear: " + e.message, "error");
    }
  }

  $("#clear-all").addEventListener("click", () =>
    clearAll("/api/memories/clear", "your memory", $("#memory-status"), loadMemory));

  $("#export-json").addEventListener("click", () => exportTo("json", null, $("#memory-status")));
  $("#export-md").addEventListener("click", () => exportTo("markdown", null, $("#memory-status")));

  async function exportTo(format, projectId, status) {
    const params = new URLSearchParams({ format });
    if (projectId) params.set("project_id", projectId);
    try {
      const name = await download("/api/export?" + params,
        "memorybank-export." + (format === "json" ? "json" : "md"));
      setStatus(status, "Exported to " + name + ".", "ok");
    } catch (e) {
      setStatus(status, "Could not export: " + e.message, "error");
    }
  }

  // ------------------------------------------------------------------ workspace

  const wsOpts = {
    manage: false,
    showAuthor: true,
    projectId: null,
    get status() { return $("#ws-status"); },
    reload: () => loadWorkspace(),
  };

  // Local mode has no accounts: its projects are those holding memories, and a new one starts
  // with its first fact.
  function showLocalWorkspace(projects) {
    const local = state.me.mode === "local";
    $("#ws-none").hidden = local || projects.length > 0;
    $("#ws-pick").hidden = !projects.length;
    $("#ws-local").hidden = !local;
    $("#ws-local-text").textContent = projects.length
      ? "Local mode: you own every project and may do anything in it. Pick a project above, or " +
        "open another by its id: its first fact starts it."
      : "No project holds memories yet. Local mode: you own every project and may do anything " +
        "in it. Open a project by its id, then add its first fact: that starts it.";
    if (local && !projects.length) $("#ws-open").open = true;
  }

  async function loadWorkspace() {
    if (!state.me) return;
    const projects = state.me.projects || [];
    showLocalWorkspace(projects);
    for (const id of ["#ws-add-form", "#ws-actions", "#ws-readonly"]) $(id).hidden = true;
    if (!projects.length) { $("#ws-list").replaceChildren(); $("#ws-empty").hidden = true; return; }
    const projectId = $("#ws-project").value || projects[0].id;
    $("#ws-project").value = projectId;
    try {
      const data = await api("GET", "/api/memory/drive/" + encodeURIComponent(projectId));
      const known = projects.find((p) => p.id === projectId);
      const role = data.role || (known && known.role) || "member";
      const manage = canManage(role);
      wsOpts.manage = manage;
      wsOpts.projectId = projectId;
      $("#ws-role").textContent = "Your role: " + role;
      $("#ws-role").className = "role-badge role-" + role;
      $("#ws-add-form").hidden = !manage;
      $("#ws-clear").hidden = !manage;
      $("#ws-readonly").hidden = manage;
      $("#ws-actions").hidden = false;
      $("#ws-list").replaceChildren(...data.memories.map((m) => memoryCard(m, wsOpts)));
      $("#ws-empty").hidden = data.memories.length > 0;
      $("#ws-count").textContent = plural(data.count, "fact") + " in " + projectName(projectId);
    } catch (e) {
      $("#ws-list").replaceChildren();
      setStatus($("#ws-status"), "Could not load this workspace: " + e.message, "error");
    }
  }

  $("#ws-project").addEventListener("change", () => { setStatus($("#ws-status"), ""); loadWorkspace(); });

  // A project id as the accounts take it (memorybank admin create-project), so that a project
  // started in local mode can be registered later.
  const PROJECT_ID = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

  $("#ws-open-id").addEventListener("input", () => {
    $("#ws-open-id").removeAttribute("aria-invalid");
    setStatus($("#ws-open-status"), "");
  });

  $("#ws-open-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = $("#ws-open-id");
    const id = input.value.trim();
    if (!PROJECT_ID.test(id)) {
      input.setAttribute("aria-invalid", "true");
      setStatus($("#ws-open-status"), (id ? "“" + id + "” is not a project id" : "Type a project id") +
        ": 1–64 letters, digits, “.”, “_”, “@” or “-”, starting with a letter or digit.", "error");
      input.focus();
      return;
    }
    const known = state.me.projects.some((p) => p.id === id);
    if (!known) state.me.projects.push({ id, name: id, role: "owner" });
    fillProjects();
    $("#ws-project").value = id;
    input.value = "";
    setStatus($("#ws-open-status"), known ? "" : "Opened “" + id + "”: add its first fact below to start it.", "ok");
    setStatus($("#ws-status"), "");
    await loadWorkspace();
    if (!known) $("#ws-add-fact").focus();
  });
  $("#ws-add-form").addEventListener("submit", (event) => {
    event.preventDefault();
    addFact("/api/memory/drive/" + encodeURIComponent($("#ws-project").value),
      $("#ws-add-fact"), $("#ws-add-category"), $("#ws-status"), loadWorkspace);
  });
  $("#ws-clear").addEventListener("click", () => {
    const id = $("#ws-project").value;
    clearAll("/api/memories/projects/" + encodeURIComponent(id) + "/clear", projectName(id),
      $("#ws-status"), loadWorkspace);
  });
  $("#ws-export").addEventListener("click", () =>
    exportTo("json", $("#ws-project").value, $("#ws-status")));

  // ------------------------------------------------------------------ forget

  $("#forget-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const query = $("#forget-q").value.trim();
    if (!query) return;
    const body = { query };
    const scope = $("#forget-scope").value;
    if (scope) body.project_id = scope;
    $("#forget-plan").hidden = true;
    $("#forget-result").hidden = true;
    setStatus($("#forget-status"), "Working out what to forget…");
    try {
      const plan = await api("POST", "/api/forget/preview", body);
      state.plan = plan;
      setStatus($("#forget-status"), "");
      renderPlan(plan);
    } catch (e) {
      setStatus($("#forget-status"), "Could not plan this: " + e.message, "error");
    }
  });

  function renderPlan(plan) {
    const steps = plan.steps || [];
    $("#forget-summary").textContent = plan.summary || "";
    const order = { FORGET: 0, REWRITE: 1, KEEP: 2 };
    const sorted = steps.slice().sort((a, b) => (order[a.action] ?? 3) - (order[b.action] ?? 3));
    $("#forget-steps").replaceChildren(...sorted.map((s) => el("li",
      { class: "step act-" + s.action, "data-action": s.action, "data-id": s.memory_id },
      el("span", { class: "action" }, s.action),
      el("p", { class: "was" }, s.content || s.memory_id),
      s.action === "REWRITE" && s.rewritten ? el("p", { class: "becomes" }, "→ " + s.rewritten) : null,
      s.reason ? el("p", { class: "reason" }, s.reason) : null)));
    if (!steps.length) {
      $("#forget-steps").append(el("li", { class: "empty" }, "Nothing in memory matches this."));
    }
    const changes = steps.filter((s) => s.action !== "KEEP").length;
    $("#forget-confirm").disabled = changes === 0;
    $("#forget-confirm").textContent = changes
      ? "Confirm: change " + plural(changes, "fact") : "Nothing to forget";
    $("#forget-expires").textContent = plan.expires_at
      ? "This plan expires at " + fmtTime(plan.expires_at) + "." : "";
    $("#forget-plan").hidden = false;
    $("#forget-confirm").disabled ? $("#forget-cancel").focus() : $("#forget-confirm").focus();
  }

  $("#forget-confirm").addEventListener("click", async () => {
    if (!state.plan) return;
    try {
      const done = await api("POST", "/api/forget/" + encodeURIComponent(state.plan.plan_id) + "/confirm");
      state.plan = null;
      $("#forget-plan").hidden = true;
      const parts = ["Forgot " + plural(done.forgotten || 0, "fact")];
      if (done.rewritten) parts.push("rewrote " + done.rewritten);
      if (done.kept) parts.push("kept " + done.kept);
      const result = $("#forget-result");
      result.textContent = "Done. " + parts.join(", ") + ".";
      result.hidden = false;
      $("#forget-q").value = "";
      loadMemory();
    } catch (e) {
      setStatus($("#forget-status"), "Could not forget: " + e.message, "error");
    }
  });

  $("#forget-cancel").addEventListener("click", async () => {
    const plan = state.plan;
    state.plan = null;
    $("#forget-plan").hidden = true;
    setStatus($("#forget-status"), "Cancelled. Nothing was changed.");
    if (plan) {
      try { await api("POST", "/api/forget/" + encodeURIComponent(plan.plan_id) + "/cancel"); }
      catch (e) { /* an expired plan needs no cancelling */ }
    }
    $("#forget-q").focus();
  });

  // ------------------------------------------------------------------ tidy up

  // One look examines a bounded page of facts (issue 27); the answer says where to go on.
  // Merging re-reads the same page, so it is sent the cursor the page started at.
  const tidy = { cursor: null, next: null };

  function tidyQuery(cursor) {
    const params = new URLSearchParams();
    const scope = $("#tidy-scope").value;
    if (scope) params.set("project_id", scope);
    if (cursor) params.set("cursor", cursor);
    const query = params.toString();
    return query ? "?" + query : "";
  }

  function moreToLook(found) {
    return found.truncated ? " " + plural(found.remaining || 0, "more fact") + " to look through." : "";
  }

  async function lookForDuplicates(cursor) {
    $("#tidy-plan").hidden = true;
    $("#tidy-more").hidden = true;
    setStatus($("#tidy-status"), "Looking for duplicates…");
    try {
      const found = await api("GET", "/api/consolidate" + tidyQuery(cursor));
      tidy.cursor = cursor;
      tidy.next = found.next_cursor || null;
      renderMerges(found);
    } catch (e) {
      setStatus($("#tidy-status"), "Could not look: " + e.message, "error");
    }
  }

  $("#tidy-form").addEventListener("submit", (event) => {
    event.preventDefault();
    lookForDuplicates(null);
  });

  $("#tidy-more").addEventListener("click", () => lookForDuplicates(tidy.next));

  function renderMerges(found) {
    const merges = found.merges || [];
    const replaced = found.supersessions || [];
    $("#tidy-more").hidden = !tidy.next;
    if (!merges.length && !replaced.length) {
      setStatus($("#tidy-status"), "No duplicates among " + plural(found.examined || 0, "fact") + "." + moreToLook(found), "ok");
      return;
    }
    setStatus($("#tidy-status"), moreToLook(found).trim());
    $("#tidy-merges").replaceChildren(...merges.map((m) => {
      const box = el("input", { type: "checkbox", checked: "", "data-keep": m.keep.id,
        "aria-label": "Merge into: " + m.keep.content });
      return el("li", { class: "step act-MERGE", "data-id": m.keep.id },
        el("label", { class: "action" }, box, " KEEP"),
        el("p", { class: "becomes" }, m.keep.content),
        ...m.merged.map((x) => el("p", { class: "was" }, x.content)));
    }), ...replaced.map((r) => {
      // An older fact a newer one surely replaces: applying supersedes it (kept in history).
      const box = el("input", { type: "checkbox", checked: "", "data-keep": r.new.id,
        "aria-label": "Replace by: " + r.new.content });
      return el("li", { class: "step act-SUPERSEDE", "data-id": r.new.id },
        el("label", { class: "action" }, box, " NEWER"),
        el("p", { class: "becomes" }, r.new.content),
        el("p", { class: "was" }, r.old.content));
    }));
    $("#tidy-plan").hidden = false;
    $("#tidy-apply").focus();
  }

  $("#tidy-apply").addEventListener("click", async () => {
    const keep = Array.from(document.querySelectorAll("#tidy-merges input:checked"))
      .map((box) => box.dataset.keep);
    if (!keep.length) return;
    const body = { keep_ids: keep };
    const scope = $("#tidy-scope").value;
    if (scope) body.project_id = scope;
    if (tidy.cursor) body.cursor = tidy.cursor;
    try {
      const done = await api("POST", "/api/consolidate", body);
      $("#tidy-plan").hidden = true;
      const replacedText = done.superseded_count ? " Replaced " + plural(done.superseded_count, "older fact") + "." : "";
      setStatus($("#tidy-status"), "Merged " + plural(done.merged_count || 0, "fact") + "." + replacedText + moreToLook(done), "ok");
      loadMemory();
    } catch (e) {
      setStatus($("#tidy-status"), "Could not merge: " + e.message, "error");
    }
  });

  // ------------------------------------------------------------------ start

  async function start() {
    delete document.body.dataset.ready;
    const ok = await loadMe();
    if (!ok) return;
    await loadMemory();
    const current = tabs.find((t) => t.getAttribute("aria-selected") === "true");
    if (current && current.dataset.tab === "workspace") loadWorkspace();
    document.body.dataset.ready = "1";
    document.dispatchEvent(new CustomEvent("memorybank:ready", { detail: state.me }));
  }

  // What live.js (events, toasts, insights, webhooks) builds on.
  window.memorybankUI = {
    api, apiKey, el, state, setStatus, fmtTime, plural, projectName, canManage, confirmDialog,
    loadMemory, loadWorkspace,
    currentTab: () => (tabs.find((t) => t.getAttribute("aria-selected") === "true") || {}).dataset,
  };

  fillCategories();
  const initial = location.hash.slice(1);
  if (tabs.some((t) => t.dataset.tab === initial)) selectTab(initial);
  // Not at once: playground.js and live.js listen for memorybank:ready, and the first API
  // answers can arrive before they have run (slow link, busy server). Deferred scripts all run
  // before DOMContentLoaded, in order.
  if (document.readyState === "complete") start();
  else document.addEventListener("DOMContentLoaded", start, { once: true });
})();
