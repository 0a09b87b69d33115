// waypost playground: vanilla JS, no dependencies. Every text from the API goes into the page as a text
// node (never innerHTML). Streams (job progress, answers) are read from fetch() bodies, since EventSource
// cannot send the Authorization header or POST a body.
"use strict";

(() => {
  const KEY = "waypost.key";
  const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);
  const STAGE_AT = { queued: 0.03, parsing: 0.1, chunking: 0.25, embedding: 0.4, indexing: 0.9 };
  const state = { key: "", who: null, strategies: [], collection: null, canWrite: false };
  const $ = (id) => document.getElementById(id);
  const enc = encodeURIComponent;

  // ---- DOM helpers -------------------------------------------------------------------------------------
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = String(v);
      else if (k === "dataset") Object.assign(node.dataset, v);
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) node.append(c);
    return node;
  }
  const fmt = (x, d = 3) => (typeof x === "number" ? Number(x.toFixed(d)).toString() : String(x));
  const ms = (x) => `${fmt(x, x < 1 ? 2 : 1)} ms`;
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const spanText = (span) => `chars ${span[0]}–${span[1]}`;
  const sectionText = (section) => (section && section.length ? section.join(" › ") : "");

  let toastTimer = null;
  function toast(message, kind = "info") {
    const t = $("toast");
    t.textContent = message;
    t.className = `toast ${kind}`;
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, kind === "error" ? 8000 : 2500);
  }
  function describe(err) {
    if (!(err instanceof ApiError) || !err.detail) return err.message || String(err);
    const parts = Array.isArray(err.detail)
      ? err.detail.map((d) => (d && d.msg ? `${(d.loc || []).slice(1).join(".")}: ${d.msg}` : JSON.stringify(d)))
      : [typeof err.detail === "string" ? err.detail : JSON.stringify(err.detail)];
    return `${err.message} (${parts.join("; ")})`;
  }
  const showError = (err) => { if (err.name !== "AbortError") toast(describe(err), "error"); };

  async function busy(button, fn) {
    $("toast").hidden = true; // a new action: older messages are stale
    button.disabled = true;
    button.classList.add("busy");
    try { return await fn(); } catch (err) { showError(err); return undefined; } finally {
      button.disabled = false;
      button.classList.remove("busy");
    }
  }

  // ---- API -----------------------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, message, detail) { super(message); this.status = status; this.detail = detail; }
  }
  async function apiError(res) {
    let message = `${res.status} ${res.statusText}`, detail = null;
    try {
      const body = await res.json();
      if (body && body.error) { message = body.error; detail = body.detail; }
    } catch { /* not JSON */ }
    if (res.status === 401 && state.who) signOut(`Signed out: ${message}`);
    return new ApiError(res.status, message, detail);
  }
  async function api(method, path, body, { signal, raw } = {}) {
    const headers = {};
    if (state.key) headers.Authorization = `Bearer ${state.key}`;
    let payload;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) { headers["Content-Type"] = "application/json"; payload = JSON.stringify(body); }
    const res = await fetch(path, { method, headers, body: payload, signal, cache: "no-store" });
    if (!res.ok) throw await apiError(res);
    if (raw) return res;
    return res.status === 204 ? null : res.json();
  }
  const collPath = (name) => `/v1/collections/${enc(name)}`;

  // Server-sent events from a fetch() response: yields {event, data} with data parsed as JSON.
  async function* sseEvents(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const event = parseEvent(block);
          if (event) yield event;
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }
  function parseEvent(block) {
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue; // comments are heartbeats
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return null;
    try { return { event, data: JSON.parse(data.join("\n")) }; } catch { return { event, data: data.join("\n") }; }
  }

  // ---- sign in ---------------------------------------------------------------------------------------------
  async function signIn(key) {
    state.key = key;
    let who;
    try {
      who = await api("GET", "/v1/whoami");
    } catch (err) {
      state.key = "";
      sessionStorage.removeItem(KEY);
      toast(err.status === 401 ? "That key was refused." : describe(err), "error");
      return;
    }
    sessionStorage.setItem(KEY, key);
    state.who = who;
    state.canWrite = who.scopes.includes("write") || who.scopes.includes("admin");
    document.body.classList.toggle("readonly", !state.canWrite);
    $("who-tenant").textContent = who.tenant;
    $("who-scopes").textContent = `${who.scopes.join(", ")} · key ${who.key_id}`;
    $("signin").hidden = true;
    $("who").hidden = false;
    $("welcome").hidden = true;
    $("app").hidden = false;
    $("key").value = "";
    $("toast").hidden = true;
    await Promise.all([loadStrategies(), loadCollections()]).catch(showError);
  }
  function signOut(message) {
    sessionStorage.removeItem(KEY);
    Object.assign(state, { key: "", who: null, collection: null });
    $("signin").hidden = false;
    $("who").hidden = true;
    $("welcome").hidden = false;
    $("app").hidden = true;
    $("viewer").hidden = true;
    for (const id of ["collections", "documents", "jobs", "q-out", "c-out", "a-out"]) $(id).replaceChildren();
    if (message) toast(message, "error");
  }

  // ---- collections -------------------------------------------------------------------------------------------
  function deleteButton(action, what) {
    const b = el("button", { type: "button", class: "danger small writer", title: `Delete ${what}`, text: "✕" });
    let armed = null;
    const reset = () => { armed = null; b.textContent = "✕"; b.classList.remove("armed"); };
    b.addEventListener("click", async (event) => {
      event.stopPropagation();
      if (!armed) { // a second click within 3 s confirms
        b.textContent = "Delete?";
        b.classList.add("armed");
        armed = setTimeout(reset, 3000);
        return;
      }
      clearTimeout(armed);
      b.disabled = true;
      try { await action(); } catch (err) { showError(err); b.disabled = false; reset(); }
    });
    return b;
  }

  async function loadCollections() {
    const { collections } = await api("GET", "/v1/collections");
    const list = $("collections");
    list.replaceChildren();
    if (!collections.length) list.append(el("li", { class: "empty muted", text: "No collections yet." }));
    for (const c of collections) {
      list.append(el("li", { class: `item${c.name === state.collection ? " active" : ""}`, dataset: { name: c.name } },
        el("button", { type: "button", class: "item-main", onclick: () => selectCollection(c.name) },
          el("span", { class: "name", text: c.name }),
          el("span", { class: "muted small", text: `${c.documents} docs · ${c.chunks} chunks` }),
          c.description ? el("span", { class: "muted small desc", text: c.description }) : null),
        deleteButton(() => deleteCollection(c.name), `collection ${c.name}`)));
    }
    if (state.collection && !collections.some((c) => c.name === state.collection)) selectCollection(null);
  }

  async function deleteCollection(name) {
    await api("DELETE", collPath(name));
    toast(`Deleted collection ${name}.`);
    if (state.collection === name) selectCollection(null);
    await loadCollections();
  }

  function selectCollection(name) {
    state.collection = name;
    for (const li of $("collections").children) li.classList.toggle("active", li.dataset.name === name);
    $("no-collection").hidden = !!name;
    $("documents-area").hidden = !name;
    $("jobs").replaceChildren();
    $("documents").replaceChildren();
    $("doc-count").textContent = "";
    for (const id of ["q-out", "c-out", "a-out"]) $(id).replaceChildren();
    document.body.dataset.collection = name || "";
    if (name) loadDocuments().catch(showError);
  }

  // ---- documents and uploads ---------------------------------------------------------------------------------
  async function loadDocuments() {
    const name = state.collection;
    const page = await api("GET", `${collPath(name)}/documents?limit=200`);
    if (name !== state.collection) return;
    $("doc-count").textContent = String(page.total);
    const list = $("documents");
    list.replaceChildren();
    if (!page.total) list.append(el("li", { class: "empty muted", text: "No documents yet: upload some." }));
    for (const d of page.documents) {
      list.append(el("li", { class: "item", dataset: { doc: d.id } },
        el("button", { type: "button", class: "item-main", onclick: () => openDocument(name, d.id) },
          el("span", { class: "name", text: d.title || d.id }),
          el("span", { class: "muted small", text: `${d.id} · ${d.chars.toLocaleString()} chars` })),
        deleteButton(() => deleteDocument(name, d.id), `document ${d.id}`)));
    }
    if (page.total > page.documents.length) {
      list.append(el("li", { class: "muted small", text: `… and ${page.total - page.documents.length} more` }));
    }
  }

  async function deleteDocument(collection, docId) {
    if (docId === "." || docId === "..") {  // a URL reads it as the folder above: the collection itself
      toast(`A document named "${docId}" cannot be deleted from here; use waypost rm.`, "error");
      return;
    }
    await api("DELETE", `${collPath(collection)}/documents/${enc(docId)}`);
    toast(`Deleted ${docId}.`);
    await Promise.all([loadDocuments(), loadCollections()]);
  }

  async function upload(event) {
    event.preventDefault();
    const input = $("upload-files");
    if (!input.files.length) { toast("Choose one or more files first.", "error"); return; }
    const form = new FormData();
    for (const f of input.files) form.append("files", f, f.name);
    await busy($("upload-btn"), async () => {
      const job = await api("POST", `${collPath(state.collection)}/documents`, form);
      input.value = "";
      $("upload-label").textContent = "Choose files…";
      followJob(job);
    });
  }

  function jobFraction(job, documents) {
    if (job.state === "succeeded") return 1;
    if (TERMINAL.has(job.state)) return 1;
    let f = STAGE_AT[job.state] ?? 0;
    const done = job.counts && job.counts.processed;
    if (job.state === "embedding" && documents && done) f += 0.45 * Math.min(1, done / documents);
    return f;
  }

  function followJob(first) {
    const collection = first.collection;
    const names = first.files.map((f) => f.name).join(", ");
    const bar = el("div", { class: "bar" });
    const label = el("span", { class: "job-state", text: first.state });
    const trail = el("div", { class: "job-trail muted small" });
    const counts = el("div", { class: "job-counts small" });
    const cancel = el("button", { type: "button", class: "ghost small writer", text: "Cancel" });
    const card = el("div", { class: "job", dataset: { jobId: first.id, state: first.state } },
      el("div", { class: "job-head" }, el("span", { class: "job-files", text: names, title: names }), label, cancel),
      el("div", { class: "progress" }, bar), trail, counts);
    $("jobs").prepend(card);
    const seen = [];
    let documents = 0;
    const show = (job) => {
      if (job.counts && job.counts.documents) documents = job.counts.documents;
      if (seen[seen.length - 1] !== job.state) {
        seen.push(job.state);
        trail.replaceChildren(...seen.map((s, i) => el("span", { class: `step ${s}`, text: i ? ` → ${s}` : s })));
      }
      card.dataset.state = job.state;
      label.textContent = job.state;
      label.className = `job-state ${job.state}`;
      bar.style.width = `${Math.round(jobFraction(job, documents) * 100)}%`;
      bar.className = `bar ${job.state}`;
      const c = job.counts || {};
      const parts = ["added", "updated", "unchanged", "chunks", "failed"].filter((k) => c[k]).map((k) => `${c[k]} ${k}`);
      if (!TERMINAL.has(job.state) && documents) parts.unshift(`${c.processed || 0}/${documents} documents`);
      counts.textContent = [parts.join(" · "), job.reason].filter(Boolean).join(" — ");
      for (const e of job.errors || []) counts.append(el("div", { class: "error", text: `${e.source}: ${e.error}` }));
      cancel.hidden = TERMINAL.has(job.state);
    };
    cancel.addEventListener("click", () => busy(cancel, async () => show(await api("POST", `/v1/jobs/${first.id}/cancel`))));
    show(first);
    (async () => {
      let last = first;
      try {
        const res = await api("GET", `/v1/jobs/${enc(first.id)}/events`, undefined, { raw: true });
        for await (const { event, data } of sseEvents(res)) {
          if (event === "progress" || event === "done") { last = data; show(data); }
          if (event === "done") break;
        }
      } catch (err) { showError(err); }
      while (!TERMINAL.has(last.state)) { // the stream broke off: poll instead
        await new Promise((r) => setTimeout(r, 500));
        try { last = await api("GET", `/v1/jobs/${enc(first.id)}`); show(last); } catch (err) { showError(err); break; }
      }
      if (last.state === "succeeded") toast(`Ingested ${names}.`);
      if (state.collection === collection) await Promise.all([loadDocuments(), loadCollections()]).catch(showError);
    })();
  }

  // ---- document viewer -----------------------------------------------------------------------------------------
  // Spans count code points (Python); JS strings count UTF-16 units, so slice by code points.
  function splitBySpan(text, start, end) {
    if (!/[\uD800-\uDFFF]/.test(text)) return [text.slice(0, start), text.slice(start, end), text.slice(end)];
    const cps = Array.from(text);
    return [cps.slice(0, start).join(""), cps.slice(start, end).join(""), cps.slice(end).join("")];
  }

  async function openDocument(collection, docId, span) {
    const viewer = $("viewer");
    viewer.hidden = false;
    $("viewer-title").textContent = docId;
    $("viewer-meta").textContent = "loading…";
    $("viewer-text").replaceChildren();
    let doc;
    try {
      doc = await api("GET", `${collPath(collection)}/documents/${enc(docId)}`);
    } catch (err) { $("viewer-meta").textContent = describe(err); return; }
    $("viewer-title").textContent = doc.title || doc.id;
    const meta = [doc.id, `${doc.text.length.toLocaleString()} chars`, doc.language, span ? `highlight ${spanText(span)}` : ""];
    $("viewer-meta").textContent = meta.filter(Boolean).join(" · ");
    const body = $("viewer-text");
    if (!span) { body.textContent = doc.text; body.scrollTop = 0; return; }
    const [before, inside, after] = splitBySpan(doc.text, span[0], span[1]);
    const mark = el("mark", { dataset: { start: span[0], end: span[1] } }, inside);
    body.replaceChildren(before, mark, after);
    mark.scrollIntoView({ block: "center" });
  }

  // ---- strategies and parameter forms --------------------------------------------------------------------------
  async function loadStrategies() {
    const { strategies } = await api("GET", "/v1/strategies");
    state.strategies = strategies;
    for (const id of ["q-strategy", "a-strategy"]) fillStrategies($(id), "auto");
    renderParams($("q-params"), "auto");
    const names = strategies.map((s) => s.name);
    $("c-pipelines").replaceChildren();
    for (const n of ["dense", "bm25"]) addPipeline(names.includes(n) ? n : names[1] || "auto");
  }

  function strategyLabel(s) {
    if (s.name === "auto") return "auto — the router picks";
    const needs = ["tree", "graph", "llm"].filter((n) => s[`needs_${n}`]);
    return `${s.name} · cost ${s.cost}${needs.length ? ` · needs ${needs.join(", ")}` : ""}`;
  }
  function fillStrategies(select, selected) {
    select.replaceChildren(...state.strategies.map((s) =>
      el("option", { value: s.name, selected: s.name === selected, text: strategyLabel(s) })));
  }

  function renderParams(container, name) {
    const spec = state.strategies.find((s) => s.name === name);
    container.replaceChildren();
    if (!spec || !spec.params.length) return;
    for (const p of spec.params) {
      const def = p.default === null || p.default === undefined ? "default" : String(p.default);
      const input = p.type === "bool"
        ? el("select", {}, el("option", { value: "", text: `default (${def})` }),
          el("option", { value: "true", text: "true" }), el("option", { value: "false", text: "false" }))
        : el("input", { type: p.type === "int" || p.type === "float" ? "number" : "text",
          step: p.type === "int" ? "1" : "any", placeholder: def, class: "num" });
      input.name = p.name;
      input.dataset.type = p.type;
      container.append(el("label", { class: "param", title: `${p.name}: ${p.type}` }, `${p.name}`, input));
    }
  }
  function paramValues(container) {
    const out = {};
    for (const input of container.querySelectorAll("[name]")) {
      const raw = input.value.trim();
      if (!raw) continue;
      const type = input.dataset.type;
      out[input.name] = type === "int" ? parseInt(raw, 10) : type === "float" ? parseFloat(raw)
        : type === "bool" ? raw === "true" : raw;
    }
    return Object.keys(out).length ? out : undefined;
  }

  function needCollection() {
    if (state.collection) return true;
    toast("Pick a collection first.", "error");
    return false;
  }

  // ---- query -----------------------------------------------------------------------------------------------------
  async function runQuery(event) {
    event.preventDefault();
    const auto = $("q-auto-collection").checked; // collection "auto": waypost chooses (no params then)
    if (!auto && !needCollection()) return;
    const body = {
      collection: auto ? "auto" : state.collection, query: $("q").value, strategy: $("q-strategy").value,
      k: Number($("q-k").value) || 10, explain: $("q-explain").checked,
      params: auto ? undefined : paramValues($("q-params")),
    };
    const rawFilters = $("q-filters").value.trim();
    $("q-filters").classList.remove("invalid");
    if (rawFilters) {
      try { body.filters = JSON.parse(rawFilters); } catch (err) {
        $("q-filters").classList.add("invalid");
        toast(`Filters are not valid JSON: ${err.message}`, "error");
        return;
      }
    }
    const collection = state.collection;
    await busy($("q-run"), async () => {
      const res = await api("POST", "/v1/retrieve", body);
      $("q-out").replaceChildren(...renderRetrieval(res, collection));
    });
  }

  function renderRetrieval(res, collection) {
    const nodes = [el("div", { class: "summary muted" },
      `${res.hits.length} hits · strategy `, el("strong", { text: res.strategy }), ` · ${ms(res.latency_ms)}`)];
    if (res.collection_choice) {
      nodes.push(el("div", { class: "summary muted collection-choice" }, "auto chose collection ",
        el("strong", { text: res.collections.join(", ") }), ` · ${res.collection_choice.reasoning}`));
    }
    if (res.route) nodes.push(routeBox(res.route));
    if (res.explanation) nodes.push(explainBox(res.explanation));
    const hits = el("div", { class: "hits" }, res.hits.map((h) => hitCard(h, collection)));
    if (!res.hits.length) hits.append(el("p", { class: "muted", text: "No hits." }));
    nodes.push(hits);
    return nodes;
  }

  function pipelineText(p) {
    if (!p) return "";
    const { strategy, ...rest } = p;
    const extra = Object.entries(rest).filter(([, v]) => v !== null && v !== undefined);
    return extra.length ? `${strategy} ${JSON.stringify(Object.fromEntries(extra))}` : String(strategy);
  }

  function confidenceMeter(value) {
    const fill = el("div", { class: "fill" });
    fill.style.width = `${Math.round(Math.max(0, Math.min(1, value)) * 100)}%`;
    return el("span", { class: "confidence" }, el("span", { class: "meter" }, fill),
      el("strong", { class: "route-confidence", text: fmt(value, 2) }));
  }

  function routeBox(route) {
    const reasons = Array.isArray(route.reasons) ? route.reasons : [route.reasoning].filter(Boolean);
    const box = el("section", { class: "card route" },
      el("div", { class: "route-head" }, el("span", { class: "muted", text: "auto chose" }),
        el("strong", { class: "route-pipeline", text: route.label || pipelineText(route.pipeline) }),
        el("code", { class: "small", text: pipelineText(route.pipeline) }),
        el("span", { class: "spacer" }), el("span", { class: "muted", text: "confidence" }),
        confidenceMeter(route.confidence ?? 0)),
      el("ul", { class: "route-reasons" }, reasons.map((r) => el("li", { text: r }))));
    const facts = [];
    if (route.plan) {
      const plan = route.plan;
      facts.push(`plan: ${[plan.mode, plan.planner && `(${plan.planner})`].filter(Boolean).join(" ")}`
        + (plan.reasoning ? ` — ${plan.reasoning}` : ""));
    }
    if (route.selector) facts.push(`selector: ${route.selector}`);
    if (route.retries) facts.push(`retries: ${route.retries}`);
    if (route.cache_hit) facts.push("from the route cache");
    if (facts.length) box.append(el("div", { class: "muted small facts" }, facts.map((f) => el("div", { text: f }))));
    if (Array.isArray(route.ranking) && route.ranking.length) {
      const top = Math.max(...route.ranking.map(([, g]) => Math.abs(g)), 1e-9);
      box.append(el("div", { class: "ranking" }, el("div", { class: "small muted", text: (route.selector || "").startsWith("learned") && !(route.selector || "").includes("heuristic") ? "predicted gain per candidate" : "score per candidate" }),
        route.ranking.map(([name, gain]) => {
          const b = el("div", { class: `gbar ${gain < 0 ? "neg" : ""}` });
          b.style.width = `${Math.round((Math.abs(gain) / top) * 100)}%`;
          return el("div", { class: "grow-row" }, el("span", { class: "gname", text: name }),
            el("span", { class: "gtrack" }, b), el("span", { class: "gval", text: fmt(gain, 4) }));
        })));
    }
    for (const a of route.attempts || []) box.append(el("div", { class: "small muted", text: `attempt: ${JSON.stringify(a)}` }));
    return box;
  }

  function timingBars(timings, total) {
    const entries = Object.entries(timings || {});
    const top = Math.max(...entries.map(([, v]) => v), 1e-9);
    return el("div", { class: "stages" }, entries.map(([stage, v]) => {
      const b = el("div", { class: "sbar" });
      b.style.width = `${Math.max(1, Math.round((v / top) * 100))}%`;
      return el("div", { class: "stage" }, el("span", { class: "sname", text: stage }),
        el("span", { class: "strack" }, b), el("span", { class: "sval", text: ms(v) }));
    }), total !== undefined ? el("div", { class: "small muted", text: `total ${ms(total)}` }) : null);
  }

  function explainBox(x) {
    const facts = [`strategy ${x.strategy}`, `${x.candidates} candidates`];
    if (x.semantic_query && x.semantic_query !== x.query) facts.push(`semantic query “${x.semantic_query}”`);
    return el("details", { class: "card explain", open: true },
      el("summary", {}, "Explain: stages and timings"),
      el("div", { class: "small muted", text: facts.join(" · ") }),
      timingBars(x.timings_ms, x.total_ms),
      x.route && x.route.timings_ms ? el("div", { class: "small muted", text: "router" }) : null,
      x.route && x.route.timings_ms ? timingBars(x.route.timings_ms) : null,
      x.filters ? el("pre", { class: "small", text: `filters ${JSON.stringify(x.filters)}` }) : null,
      (x.notes || []).map((n) => el("div", { class: "small note", text: n })),
      x.llm ? el("pre", { class: "small", text: `llm ${JSON.stringify(x.llm)}` }) : null);
  }

  function hitCard(hit, collection, extraClass = "") {
    const text = hit.text.length > 420 ? `${hit.text.slice(0, 420)}…` : hit.text;
    const section = sectionText(hit.section);
    return el("article", { class: `hit ${extraClass}`, dataset: { doc: hit.document_id, chunk: hit.chunk_id } },
      el("header", {},
        el("span", { class: "rank", text: `#${hit.rank}` }),
        el("strong", { class: "title", text: hit.title || hit.document_id }),
        el("span", { class: "badge", text: hit.strategy }),
        el("span", { class: "score", title: "score", text: fmt(hit.score, 4) })),
      el("div", { class: "meta small muted" },
        el("code", { class: "doc-id", text: hit.document_id }),
        section ? el("span", { class: "section", text: `§ ${section}` }) : null,
        el("span", { class: "span", text: spanText(hit.span) })),
      el("p", { class: "text", text }),
      hit.passage ? el("div", { class: "small muted passage", text: `passage (${hit.passage.policy}) of `
        + `${plural((hit.passage.chunk_ids || []).length, "chunk")} around ${hit.passage.anchor}` }) : null,
      el("button", { type: "button", class: "link small", text: "Open in document →",
        onclick: () => openDocument(hit.collection || collection, hit.document_id, hit.span) }));
  }

  // ---- compare -----------------------------------------------------------------------------------------------------
  function addPipeline(strategy) {
    const rows = $("c-pipelines");
    if (rows.children.length >= 3) return;
    const select = el("select", { class: "c-strategy" });
    fillStrategies(select, strategy);
    const params = el("div", { class: "params" });
    const remove = el("button", { type: "button", class: "ghost small", text: "remove" });
    const row = el("div", { class: "pipeline" },
      el("div", { class: "row" }, el("span", { class: "pnum" }), select, remove), params);
    select.addEventListener("change", () => renderParams(params, select.value));
    remove.addEventListener("click", () => { row.remove(); syncPipelines(); });
    renderParams(params, select.value);
    rows.append(row);
    syncPipelines();
  }
  function syncPipelines() {
    const rows = [...$("c-pipelines").children];
    rows.forEach((r, i) => {
      r.querySelector(".pnum").textContent = String.fromCharCode(65 + i);
      r.querySelector("button").hidden = rows.length <= 2;
    });
    $("c-add").disabled = rows.length >= 3;
  }

  async function runCompare(event) {
    event.preventDefault();
    if (!needCollection()) return;
    const pipelines = [...$("c-pipelines").children].map((row) => {
      const p = { strategy: row.querySelector("select").value };
      const params = paramValues(row.querySelector(".params"));
      if (params) p.params = params;
      return p;
    });
    const collection = state.collection;
    const body = { collection, query: $("c-q").value, pipelines, k: Number($("c-k").value) || 5 };
    await busy($("c-run"), async () => {
      const res = await api("POST", "/v1/compare", body);
      $("c-out").replaceChildren(...renderCompare(res, collection));
    });
  }

  function renderCompare(res, collection) {
    const names = res.runs.map((_, i) => String.fromCharCode(65 + i));
    const shared = new Set(res.shared_documents);
    const matrix = el("table", { class: "overlap" },
      el("tr", {}, el("th", {}), names.map((n) => el("th", { text: n }))),
      res.overlap.map((row, i) => el("tr", {}, el("th", { text: names[i] }),
        row.map((v, j) => {
          const cell = el("td", { class: i === j ? "diag" : "", text: fmt(v, 2) });
          cell.style.setProperty("--o", String(v));
          return cell;
        }))));
    const pairs = [];
    for (let i = 0; i < names.length; i++) {
      for (let j = i + 1; j < names.length; j++) pairs.push([`${names[i]}∩${names[j]}`, res.overlap[i][j]]);
    }
    const summary = el("section", { class: "card compare-summary" },
      el("div", { class: "pairs" }, pairs.map(([label, v]) =>
        el("div", { class: "pair" }, el("span", { class: "muted small", text: `overlap ${label}` }),
          el("strong", { class: "overlap-value", text: v.toFixed(2) })))),
      matrix,
      el("div", { class: "shared small" }, el("span", { class: "muted", text: "shared by all: " }),
        res.shared_documents.length ? res.shared_documents.map((d) => el("code", { class: "chip shared", text: d }))
          : el("span", { class: "muted", text: "none" })),
      el("div", { class: "muted small", text: "overlap: Jaccard similarity of the documents each pipeline found" }));
    const columns = el("div", { class: `columns cols-${res.runs.length}` }, res.runs.map((run, i) =>
      el("section", { class: "column", dataset: { pipeline: run.pipeline.strategy } },
        el("header", {}, el("span", { class: "pnum", text: names[i] }),
          el("strong", { text: pipelineText(run.pipeline) }), el("span", { class: "muted small", text: ms(run.latency_ms) })),
        run.route ? el("div", { class: "small route-mini" }, "auto chose ",
          el("strong", { text: run.route.label || pipelineText(run.route.pipeline) }), " · confidence ",
          confidenceMeter(run.route.confidence ?? 0)) : null,
        run.hits.map((h) => hitCard(h, collection, shared.has(h.document_id) ? "shared" : "")),
        run.hits.length ? null : el("p", { class: "muted", text: "No hits." }))));
    return [summary, columns];
  }

  // ---- answer --------------------------------------------------------------------------------------------------------
  let answerAbort = null;

  function linkCitations(text, citations, collection) {
    const byN = new Map(citations.map((c) => [c.n, c]));
    const out = [];
    let last = 0;
    for (const m of text.matchAll(/\[(\d+)\]/g)) {
      const c = byN.get(Number(m[1]));
      if (!c) continue;
      out.push(text.slice(last, m.index), citeButton(c, collection));
      last = m.index + m[0].length;
    }
    out.push(text.slice(last));
    return out;
  }
  function citeButton(c, collection) {
    return el("button", { type: "button", class: "cite", dataset: { n: c.n }, title: `${c.title || c.document_id}, ${spanText(c.span)}`,
      text: `[${c.n}]`, onclick: () => openDocument(collection, c.document_id, c.span) });
  }

  async function runAnswer(event) {
    event.preventDefault();
    if (!needCollection()) return;
    if (answerAbort) answerAbort.abort();
    const controller = new AbortController();
    answerAbort = controller;
    const collection = state.collection;
    const status = el("div", { class: "answer-status streaming", text: "retrieving…" });
    const text = el("div", { class: "answer-text" });
    const foot = el("div", { class: "answer-foot" });
    const sources = el("div", { class: "sources" });
    $("a-out").replaceChildren(el("section", { class: "card answer" }, status, text, foot), sources);
    const body = { collection, question: $("a-q").value, strategy: $("a-strategy").value,
      k: Number($("a-k").value) || 5, stream: true };
    let tokens = 0;
    $("a-stop").disabled = false;
    await busy($("a-run"), async () => {
      try {
        const res = await api("POST", "/v1/answer", body, { signal: controller.signal, raw: true });
        for await (const { event: name, data } of sseEvents(res)) {
          if (name === "retrieval") {
            status.textContent = `${data.sources} sources · writing…`;
            sources.replaceChildren(el("h3", { text: "Sources" }),
              ...data.hits.map((h) => hitCard(h, collection)));
          } else if (name === "token") {
            tokens += 1;
            text.append(data.text);
            status.textContent = `streaming · ${plural(tokens, "token event")}`;
          } else if (name === "done") {
            finishAnswer(data, { status, text, foot, tokens, collection });
          } else if (name === "error") {
            status.className = "answer-status failed";
            status.textContent = `error: ${data.error}`;
          }
        }
      } catch (err) {
        status.className = "answer-status failed";
        status.textContent = err.name === "AbortError" ? "stopped" : describe(err);
      } finally {
        if (answerAbort === controller) answerAbort = null;
        $("a-stop").disabled = true;
      }
    });
  }

  function finishAnswer(data, { status, text, foot, tokens, collection }) {
    status.className = `answer-status done ${data.supported ? "supported" : "unsupported"}`;
    status.textContent = `done · ${data.mode} · ${plural(tokens, "token event")}`
      + (data.supported ? "" : " · not supported by the sources");
    text.replaceChildren(...linkCitations(data.answer, data.citations, collection));
    foot.replaceChildren(
      el("h3", { text: "Citations" }),
      el("ol", { class: "citations" }, data.citations.map((c) => el("li", { dataset: { n: c.n } },
        citeButton(c, collection), el("strong", { text: ` ${c.title || c.document_id}` }),
        el("span", { class: "muted small", text: ` ${c.document_id} · ${spanText(c.span)}` }),
        el("blockquote", { text: c.text })))),
      data.usage && Object.keys(data.usage).length
        ? el("div", { class: "muted small usage", text: Object.entries(data.usage)
          .filter(([, v]) => typeof v !== "object").map(([k, v]) => `${k} ${fmt(v)}`).join(" · ") }) : null);
  }

  // ---- wiring ----------------------------------------------------------------------------------------------------------
  function init() {
    $("signin").addEventListener("submit", (e) => { e.preventDefault(); signIn($("key").value.trim()); });
    $("signout").addEventListener("click", () => signOut());
    $("new-collection").addEventListener("submit", async (e) => {
      e.preventDefault();
      const name = $("new-collection-name").value.trim();
      const button = e.target.querySelector("button");
      await busy(button, async () => {
        await api("POST", "/v1/collections", { name, description: $("new-collection-desc").value.trim() });
        $("new-collection-name").value = "";
        $("new-collection-desc").value = "";
        await loadCollections();
        selectCollection(name);
      });
    });
    $("upload").addEventListener("submit", upload);
    $("upload-files").addEventListener("change", (e) => {
      const files = [...e.target.files];
      $("upload-label").textContent = files.length ? files.map((f) => f.name).join(", ") : "Choose files…";
    });
    $("query-form").addEventListener("submit", runQuery);
    $("q-strategy").addEventListener("change", (e) => renderParams($("q-params"), e.target.value));
    $("compare-form").addEventListener("submit", runCompare);
    $("c-add").addEventListener("click", () => addPipeline("hybrid"));
    $("answer-form").addEventListener("submit", runAnswer);
    $("a-stop").addEventListener("click", () => { if (answerAbort) answerAbort.abort(); });
    $("viewer-close").addEventListener("click", () => { $("viewer").hidden = true; });
    document.addEventListener("keydown", (e) => { if (e.key === "Escape") $("viewer").hidden = true; });
    for (const tab of document.querySelectorAll(".tab")) {
      tab.addEventListener("click", () => {
        for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t === tab);
        for (const page of document.querySelectorAll(".tabpage")) page.hidden = page.id !== `tab-${tab.dataset.tab}`;
      });
    }
    const saved = sessionStorage.getItem(KEY);
    if (saved !== null) signIn(saved);
  }
  init();
})();
