/* memorybank UI, live parts: the events stream (pages update as memory changes, and a toast
   says what the assistant remembered or forgot, with Undo), the Insights page (charts drawn
   with the Chart.js file this server serves) and the Webhooks page. Built on app.js
   (window.memorybankUI); no network beyond this server. */
"use strict";

(function () {
  const ui = () => window.memorybankUI;
  const $ = (sel, root) => (root || document).querySelector(sel);
  const TOAST_MS = 10000;
  const EVENT_TYPES = ["created", "updated", "superseded", "merged", "deleted", "cleared", "forgotten", "test"];

  // ------------------------------------------------------------------ events stream

  const live = { controller: null, lastId: null, texts: new Map(), timers: {} };

  function sleep(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }

  // fetch, not EventSource: EventSource cannot send the Authorization header. Reconnects
  // send Last-Event-ID, so nothing is missed while the connection was down.
  async function follow() {
    if (live.controller) live.controller.abort();
    const mine = new AbortController();
    live.controller = mine;
    let delay = 500;
    while (!mine.signal.aborted) {
      try {
        const headers = { Accept: "text/event-stream" };
        const key = ui().apiKey();
        if (key) headers.Authorization = "Bearer " + key;
        if (live.lastId !== null) headers["Last-Event-ID"] = String(live.lastId);
        const response = await fetch("/api/events", { headers, signal: mine.signal });
        if (!response.ok) throw new Error("HTTP " + response.status);
        document.body.dataset.live = "1";
        delay = 500;
        await readStream(response.body.getReader());
      } catch (e) {
        if (mine.signal.aborted) return;
      }
      delete document.body.dataset.live;
      await sleep(delay);
      delay = Math.min(delay * 2, 15000);
    }
  }

  async function readStream(reader) {
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer = (buffer + decoder.decode(value, { stream: true })).replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        message(block);
      }
    }
  }

  function message(block) {
    const fields = {};
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const at = line.indexOf(":");
      const name = at < 0 ? line : line.slice(0, at);
      const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
      fields[name] = fields[name] !== undefined && name === "data" ? fields[name] + "\n" + value : value;
    }
    if (fields.id !== undefined) live.lastId = fields.id;
    if (!fields.data) return;
    let event;
    try { event = JSON.parse(fields.data); } catch (e) { return; }
    onEvent(event);
  }

  function shownText(memoryId) {
    if (live.texts.has(memoryId)) return live.texts.get(memoryId);
    const node = document.querySelector('.memory[data-id="' + CSS.escape(memoryId) + '"] .content');
    return node ? node.textContent : null;
  }

  function onEvent(event) {
    const me = ui().state.me;
    if (!me) return;
    const before = shownText(event.memory_id);
    if (event.content) live.texts.set(event.memory_id, event.content);
    refreshFor(event, me);
    if (event.channel === "ai" && event.actor === me.user_id) toastFor(event, before);
    document.dispatchEvent(new CustomEvent("memorybank:event", { detail: event }));
  }

  // Several events in a burst (a clear, an import) reload a list once.
  function later(name, fn) {
    clearTimeout(live.timers[name]);
    live.timers[name] = setTimeout(fn, 120);
  }

  // A reload re-renders the list: while a fact in it is being edited, wait until the edit is
  // saved or cancelled, so a change made elsewhere never throws away what the user is typing.
  function whenNotEditing(list, name, fn) {
    return function run() {
      if (document.querySelector(list + " form.edit")) live.timers[name] = setTimeout(run, 300);
      else fn();
    };
  }

  function refreshFor(event, me) {
    if (event.project_id === null && event.user_id === me.user_id) {
      later("memory", whenNotEditing("#memory-list", "memory", () => ui().loadMemory()));
    }
    const tab = ui().currentTab() || {};
    if (event.project_id && tab.tab === "workspace" && $("#ws-project").value === event.project_id) {
      later("workspace", whenNotEditing("#ws-list", "workspace", () => ui().loadWorkspace()));
    }
  }

  // ------------------------------------------------------------------ toasts

  function mayUndo(event) {
    if (event.project_id === null) return true;
    const project = (ui().state.me.projects || []).find((p) => p.id === event.project_id);
    return ui().state.me.mode === "local" || (project && ui().canManage(project.role));
  }

  function toastFor(event, before) {
    const quote = (text) => text || "a memory";
    if (event.type === "created") {
      toast(event, "Remembered: " + quote(event.content), mayUndo(event) ? () => undo(event) : null);
    } else if (event.type === "superseded") {
      const gone = Object.assign({}, event, { content: event.content || before });
      toast(gone, "Replaced: " + quote(gone.content), mayUndo(event) ? () => restore(gone) : null);
    } else if (event.type === "updated") {
      // The model changed a fact in place (remember with its id, or a conversation's update):
      // Undo puts the text before the change back.
      toast(event, "Updated: " + quote(event.content), mayUndo(event) ? () => revert(event) : null);
    } else if (event.type === "merged") {
      merged(event, before);
    } else if (event.type === "deleted" || event.type === "forgotten" || event.type === "cleared") {
      toast(event, "Forgot: " + quote(before), null);
    }
  }

  function toast(event, text, onUndo) {
    const box = $("#toasts");
    const node = ui().el("div", { class: "toast toast-" + event.type, "data-memory-id": event.memory_id },
      ui().el("span", { class: "toast-text" }, text));
    const close = () => node.remove();
    if (onUndo) {
      node.append(ui().el("button", { type: "button", class: "small undo",
        onclick: async () => { await onUndo(node); setTimeout(close, 2500); } }, "Undo"));
    }
    node.append(ui().el("button", { type: "button", class: "small ghost dismiss", "aria-label": "Dismiss",
      onclick: close }, "×"));
    box.append(node);
    setTimeout(close, TOAST_MS);
  }

  async function undo(event) {
    const path = event.project_id === null
      ? "/api/memory/user/" + encodeURIComponent(event.memory_id)
      : "/api/memory/drive/" + encodeURIComponent(event.memory_id);
    const node = document.querySelector('.toast[data-memory-id="' + CSS.escape(event.memory_id) + '"]');
    const text = node && node.querySelector(".toast-text");
    try {
      await ui().api("DELETE", path);
      if (text) text.textContent = "Undone: the assistant will not remember “" + (event.content || "it") + "”.";
    } catch (e) {
      if (text) text.textContent = "Could not undo: " + e.message;
    }
    const button = node && node.querySelector("button.undo");
    if (button) button.remove();
  }

  function scopeQuery(event) {
    return event.project_id === null ? "" : "?project_id=" + encodeURIComponent(event.project_id);
  }

  // A change the model settled by merging a fact into one that already says its new text:
  // both get an event; the merged one is replaced (Undo restores it), the kept one is as it
  // was, so only the first gets a toast.
  async function merged(event, before) {
    let memory;
    try {
      memory = await ui().api("GET", "/api/memories/" + encodeURIComponent(event.memory_id) + scopeQuery(event));
    } catch (e) {
      return;  // gone already (deleted since): nothing to say or undo
    }
    if (!memory.superseded_by) return;
    const gone = Object.assign({}, event, { content: before || memory.content });
    toast(gone, "Replaced: " + (gone.content || "a memory"), mayUndo(event) ? () => restore(gone) : null);
  }

  // Undo of an "Updated: …": the text the fact had before the model's change, from its
  // history, written back (the change and its undoing both stay in history).
  async function revert(event) {
    const node = document.querySelector('.toast[data-memory-id="' + CSS.escape(event.memory_id) + '"]');
    const text = node && node.querySelector(".toast-text");
    const path = "/api/memories/" + encodeURIComponent(event.memory_id);
    try {
      const history = await ui().api("GET", path + "/history" + scopeQuery(event));
      const changes = history.events.filter((e) => e.kind === "UPDATE" && e.old_content &&
        e.old_content !== e.new_content);
      const last = changes[changes.length - 1];
      if (!last) throw new Error("its history has no earlier text");
      await ui().api("PATCH", path + scopeQuery(event), { content: last.old_content });
      if (text) text.textContent = "Undone: “" + last.old_content + "” is remembered again.";
    } catch (e) {
      if (text) text.textContent = "Could not undo: " + e.message;
    }
    const button = node && node.querySelector("button.undo");
    if (button) button.remove();
  }

  // Undo of a "Replaced: …": the replaced fact comes back; the newer one stays.
  async function restore(event) {
    const node = document.querySelector('.toast[data-memory-id="' + CSS.escape(event.memory_id) + '"]');
    const text = node && node.querySelector(".toast-text");
    try {
      await ui().api("POST", "/api/memories/" + encodeURIComponent(event.memory_id) + "/restore" + scopeQuery(event));
      if (text) text.textContent = "Restored: “" + (event.content || "it") + "” is remembered again.";
    } catch (e) {
      if (text) text.textContent = "Could not restore: " + e.message;
    }
    const button = node && node.querySelector("button.undo");
    if (button) button.remove();
  }

  // ------------------------------------------------------------------ insights

  const charts = {};
  let chartLib = null;

  function loadChartLib() {
    if (!chartLib) {
      chartLib = new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = "ui/chart.umd.min.js";
        script.onload = () => resolve(window.Chart);
        script.onerror = () => reject(new Error("could not load the chart library"));
        document.head.append(script);
      });
    }
    return chartLib;
  }

  function pct(value) {
    return value === null || value === undefined ? "–" : Math.round(value * 100) + " %";
  }

  function kpi(label, value, target, good) {
    return ui().el("div", { class: "kpi card" + (good === true ? " on-target" : good === false ? " off-target" : "") },
      ui().el("span", { class: "kpi-label" }, label),
      ui().el("strong", { class: "kpi-value" }, value),
      target ? ui().el("span", { class: "kpi-target" }, "target " + target) : null);
  }

  function draw(Chart, id, config) {
    if (charts[id]) charts[id].destroy();
    config.options = Object.assign({ responsive: true, maintainAspectRatio: false, animation: false,
      plugins: { legend: { display: config.type === "doughnut" } } }, config.options || {});
    charts[id] = new Chart(document.getElementById(id), config);
  }

  async function loadInsights() {
    const status = $("#insights-status");
    const local = ui().state.me.mode === "local";
    $("#insights-whose").textContent = local
      ? "for the whole database (local mode: you may see everything)" : "for your org (org admins)";
    ui().setStatus(status, "Loading…");
    let m;
    try {
      m = await ui().api("GET", "/api/stats/metrics?window_days=" + $("#insights-window").value);
    } catch (e) {
      $("#insights-body").hidden = true;
      ui().setStatus(status, e.status === 403
        ? "Insights are for org admins: they show how memory is used across an org. Ask your " +
          "server's operator to make you an admin of your org."
        : "Could not load insights: " + e.message, e.status === 403 ? "" : "error");
      return;
    }
    const a = m.adoption, r = m.retention, t = m.tokens;
    const avg = t.block_tokens_avg === null ? "–" : Math.round(t.block_tokens_avg) + " tokens";
    $("#insights-kpis").replaceChildren(
      kpi("Active users with memory", pct(a.share_with_memory) + " of " + a.active_users, "≥ 30 %",
        a.share_with_memory === null ? null : a.share_with_memory >= a.target_share),
      kpi("Memories per user", String(a.memories_per_user.mean), a.memories_per_user.target),
      kpi("Memories per project", String(a.memories_per_project.mean), a.memories_per_project.target),
      kpi("Deleted within 7 days", pct(r.share_deleted_within_7_days) + " of " + r.created, "< 20 %",
        r.share_deleted_within_7_days === null ? null : r.share_deleted_within_7_days < r.target_max_share),
      kpi("Memory block", avg + (t.block_tokens_p95 !== null ? " · p95 ≤ " + t.block_tokens_p95 : ""), "< 500",
        t.block_tokens_avg === null ? null : t.block_tokens_avg < t.target_block_tokens),
      kpi("Block share of prompt", pct(t.block_share_of_prompt)),
      kpi("Search hit rate", pct(m.search_hits.hit_rate) + " of " + m.search_hits.searches),
      kpi("Duplicates refused · conflicts", m.saves.duplicates_refused + " · " + m.saves.conflicts_surfaced));
    $("#insights-body").hidden = false;
    ui().setStatus(status, "");
    let Chart;
    try { Chart = await loadChartLib(); } catch (e) { ui().setStatus(status, e.message, "error"); return; }
    const bars = (dist, color) => ({ type: "bar", data: { labels: dist.buckets.map((b) => b.label),
      datasets: [{ label: "count", data: dist.buckets.map((b) => b.count), backgroundColor: color }] },
      options: { scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } } });
    draw(Chart, "chart-users", bars(a.memories_per_user, "#2f5bd3"));
    draw(Chart, "chart-projects", bars(a.memories_per_project, "#0f6b4b"));
    const by = r.deleted_within_7_days_by;
    const kept = Math.max(0, r.created - r.deleted_within_7_days);
    draw(Chart, "chart-deleted", { type: "doughnut", data: {
      labels: ["kept", "deleted by the user", "deleted by the AI", "other"],
      datasets: [{ data: [kept, by.user || 0, by.ai || 0,
        r.deleted_within_7_days - (by.user || 0) - (by.ai || 0)],
      backgroundColor: ["#dde1e8", "#b42318", "#9a6700", "#5b6475"] }] } });
    draw(Chart, "chart-saves", { type: "bar", data: {
      labels: ["saved", "duplicates refused", "conflicts", "searches", "with hits"],
      datasets: [{ label: "count", data: [m.saves.saves, m.saves.duplicates_refused, m.saves.conflicts_surfaced,
        m.search_hits.searches, m.search_hits.searches_with_hits],
      backgroundColor: ["#2f5bd3", "#9a6700", "#b42318", "#6b21a8", "#13795b"] }] },
      options: { indexAxis: "y", scales: { x: { beginAtZero: true, ticks: { precision: 0 } } } } });
    document.body.dataset.insights = "1";
  }

  $("#insights-window").addEventListener("change", loadInsights);

  // ------------------------------------------------------------------ webhooks

  function managedProjects() {
    const me = ui().state.me;
    return ((me && me.projects) || []).filter((p) => me.mode === "local" || ui().canManage(p.role));
  }

  function fillWebhookForm() {
    const select = $("#wh-project");
    const keep = select.value;
    const projects = managedProjects();
    select.replaceChildren(...projects.map((p) => ui().el("option", { value: p.id, text: p.name || p.id })));
    if (keep) select.value = keep;
    const local = ui().state.me.mode === "local";
    $("#wh-form").hidden = !projects.length;
    $("#wh-none").hidden = projects.length > 0 || local;
    $("#wh-none-local").hidden = projects.length > 0 || !local;
    if (!$("#wh-types").children.length) {
      $("#wh-types").replaceChildren(...EVENT_TYPES.map((type) => ui().el("label", { class: "check" },
        ui().el("input", { type: "checkbox", name: "type", value: type, checked: type !== "test" }),
        ui().el("span", {}, type))));
    }
  }

  function deliveryTable(deliveries) {
    if (!deliveries.length) return ui().el("p", { class: "hint" }, "No deliveries yet.");
    return ui().el("table", { class: "deliveries" },
      ui().el("thead", {}, ui().el("tr", {}, ["When", "Event", "Status", "Attempts", "Last answer"]
        .map((h) => ui().el("th", { scope: "col" }, h)))),
      ui().el("tbody", {}, deliveries.map((d) => ui().el("tr", { class: "delivery st-" + d.status },
        ui().el("td", {}, ui().fmtTime(d.created_at)),
        ui().el("td", {}, d.event_type + (d.event_id ? " #" + d.event_id : "")),
        ui().el("td", { class: "delivery-status" }, d.status),
        ui().el("td", {}, String(d.attempts)),
        ui().el("td", {}, d.last_status ? "HTTP " + d.last_status : d.last_error || "–")))));
  }

  async function showLog(hook, box) {
    try {
      const data = await ui().api("GET", "/api/webhooks/" + encodeURIComponent(hook.id) + "/deliveries");
      box.replaceChildren(deliveryTable(data.deliveries));
    } catch (e) {
      box.replaceChildren(ui().el("p", { class: "status error" }, "Could not load the log: " + e.message));
    }
  }

  function hookCard(hook) {
    const log = ui().el("div", { class: "log" });
    const status = ui().el("span", { class: "status", role: "status" });
    const li = ui().el("li", { class: "memory webhook", "data-id": hook.id },
      ui().el("p", { class: "content" }, hook.url),
      ui().el("div", { class: "meta" },
        ui().el("span", { class: "badge" }, ui().projectName(hook.project_id || hook.org_id)),
        ui().el("span", {}, hook.event_types.join(", "))),
      // Its creator may no longer manage it: nothing is sent, and the server says why.
      hook.paused && ui().el("p", { class: "status error paused" }, "Paused — " + hook.paused),
      ui().el("div", { class: "ops" },
        ui().el("button", { type: "button", class: "small send-test", onclick: async () => {
          try {
            await ui().api("POST", "/api/webhooks/" + encodeURIComponent(hook.id) + "/test");
            ui().setStatus(status, "Test queued.", "ok");
            await showLog(hook, log);
            setTimeout(() => showLog(hook, log), 1500);
          } catch (e) { ui().setStatus(status, "Could not send: " + e.message, "error"); }
        } }, "Send test"),
        ui().el("button", { type: "button", class: "small show-log", onclick: () => showLog(hook, log) }, "Delivery log"),
        ui().el("button", { type: "button", class: "small danger delete", onclick: async () => {
          if (!(await ui().confirmDialog("Delete this webhook?", hook.url + " will receive no more events.", "Delete"))) return;
          try {
            await ui().api("DELETE", "/api/webhooks/" + encodeURIComponent(hook.id));
            await loadWebhooks();
          } catch (e) { ui().setStatus(status, "Could not delete: " + e.message, "error"); }
        } }, "Delete")),
      status, log);
    return li;
  }

  async function loadWebhooks() {
    fillWebhookForm();
    try {
      const data = await ui().api("GET", "/api/webhooks");
      $("#wh-list").replaceChildren(...data.webhooks.map(hookCard));
      $("#wh-empty").hidden = data.webhooks.length > 0;
    } catch (e) {
      ui().setStatus($("#wh-status"), "Could not load webhooks: " + e.message, "error");
    }
  }

  $("#wh-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const types = Array.from(document.querySelectorAll('#wh-types input:checked')).map((i) => i.value);
    const body = { url: $("#wh-url").value.trim(), project_id: $("#wh-project").value, event_types: types };
    try {
      const hook = await ui().api("POST", "/api/webhooks", body);
      $("#wh-url").value = "";
      const secret = $("#wh-secret");
      secret.replaceChildren("Signing secret (shown once, keep it safe): ",
        ui().el("code", { class: "secret" }, hook.secret));
      secret.hidden = false;
      ui().setStatus($("#wh-status"), "Webhook added.", "ok");
      await loadWebhooks();
    } catch (e) {
      ui().setStatus($("#wh-status"), "Could not add: " + e.message, "error");
    }
  });

  // ------------------------------------------------------------------ wiring

  document.addEventListener("memorybank:ready", () => {
    live.lastId = null;
    follow();
    const tab = ui().currentTab() || {};
    if (tab.tab === "insights") loadInsights();
    if (tab.tab === "webhooks") loadWebhooks();
  });
  document.addEventListener("memorybank:tab", (event) => {
    if (!ui() || !ui().state.me) return;
    if (event.detail === "insights") loadInsights();
    if (event.detail === "webhooks") loadWebhooks();
  });
})();
