// The review console. Mail is hostile: every string from the API goes into the DOM as
// text (textContent, createTextNode), never as HTML; the CSP forbids inline script anyway.
"use strict";

const state = { session: null, items: [], selected: 0, message: null };
const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({ credentials: "same-origin" }, options));
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  if (!response.ok) {
    const err = new Error((body && body.error && body.error.message) || response.statusText);
    err.status = response.status;
    throw err;
  }
  return body;
}

function pct(x) { return x === null || x === undefined ? "–" : (100 * x).toFixed(1) + " %"; }
function score(x) { return x === null || x === undefined ? "–" : Number(x).toFixed(3); }
function when(t) { return new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19); }

// --- queue -------------------------------------------------------------------------------

function filterQuery() {
  const form = new FormData($("filters"));
  const q = new URLSearchParams();
  for (const [k, v] of form.entries()) if (v) q.set(k, v);
  return q.toString();
}

async function loadQueue() {
  const data = await api("/ui/api/queue?" + filterQuery());
  state.items = data.items;
  state.selected = Math.min(state.selected, Math.max(0, data.items.length - 1));
  const c = data.counts;
  $("counts").textContent = `${c.filtered} shown · ${c.open} open · ${c.decided} decided · ` +
    `${c.review || 0} review · ${c.quarantine || 0} quarantine`;
  const body = $("queue").tBodies[0];
  body.replaceChildren();
  data.items.forEach((m, i) => {
    const row = el("tr");
    row.dataset.requestId = m.request_id;
    row.className = i === state.selected ? "selected" : "";
    for (const v of [when(m.created_at), m.tenant || "(default)", m.action, score(m.score),
                     m.subject || m.preview || "(no subject)", m.sender, m.decision || ""]) {
      row.appendChild(el("td", v));
    }
    row.addEventListener("click", () => openMessage(m.request_id));
    body.appendChild(row);
  });
}

function select(delta) {
  if (!state.items.length) return;
  state.selected = Math.max(0, Math.min(state.items.length - 1, state.selected + delta));
  [...$("queue").tBodies[0].rows].forEach((r, i) => { r.className = i === state.selected ? "selected" : ""; });
}

// --- message -----------------------------------------------------------------------------

function highlighted(text, words) {
  // Text nodes and <mark> elements only; the words are matched literally (escaped).
  const frag = document.createDocumentFragment();
  const wanted = words.filter((w) => w && w.length > 1);
  if (!wanted.length) { frag.appendChild(document.createTextNode(text)); return frag; }
  const escaped = wanted.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const re = new RegExp("(" + escaped.join("|") + ")", "gi");
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) frag.appendChild(document.createTextNode(text.slice(last, m.index)));
    frag.appendChild(el("mark", m[0]));
    last = m.index + m[0].length;
  }
  if (last < text.length) frag.appendChild(document.createTextNode(text.slice(last)));
  return frag;
}

function showError(text) {
  $("message").hidden = true;
  $("error").hidden = false;
  $("error").textContent = text;
}

async function openMessage(requestId, push = true) {
  if (push) history.pushState({ requestId }, "", "/ui/message/" + encodeURIComponent(requestId));
  $("queue-view").hidden = true;
  $("message-view").hidden = false;
  $("error").hidden = true;
  let m;
  try {
    m = await api("/ui/api/messages/" + encodeURIComponent(requestId));
  } catch (e) {
    showError(e.status === 403 ? "403 Forbidden: " + e.message : `${e.status || ""} ${e.message}`);
    return;
  }
  state.message = m;
  $("message").hidden = false;
  $("m-subject").textContent = m.subject || "(no subject)";
  $("m-sender").textContent = m.sender || "–";
  $("m-verdict").textContent = `${m.action} · label ${m.label} · score ${score(m.score)}`;
  $("m-probs").textContent = Object.entries(m.probabilities).map(([k, v]) => `${k} ${score(v)}`).join(" · ");
  $("m-model").textContent = `${m.model} version ${m.model_version}`;
  $("m-tenant").textContent = m.tenant || "(default)";
  $("m-rid").textContent = m.request_id;
  $("m-links").textContent = m.link_domains.length ? m.link_domains.join(", ") : "–";
  // Every explained span is listed with its pull on the score; those that pushed it up
  // (towards spam) are the trigger words, highlighted in the text.
  const spans = m.explanation || [];
  const up = spans.filter((s) => s.contribution > 0);
  $("m-triggers").replaceChildren(...spans.map((s) =>
    el(s.contribution > 0 ? "mark" : "span", `${s.span} ${s.contribution >= 0 ? "+" : ""}${Number(s.contribution).toFixed(4)}`, "span")));
  if (!spans.length) $("m-triggers").textContent = "–";
  $("m-text").replaceChildren(highlighted(m.text, up.map((s) => s.span)));
  $("m-decision").textContent = m.decision ? `${m.decision} by ${m.decided_by}` : "open";
  $("btn-release").hidden = m.action !== "quarantine";
  $("m-source-box").open = false;
  $("m-headers").tBodies[0].replaceChildren();
  $("m-source").textContent = "";
}

async function loadSource() {
  if (!state.message || $("m-source").textContent) return;
  const s = await api("/ui/api/messages/" + encodeURIComponent(state.message.request_id) + "/source");
  const body = $("m-headers").tBodies[0];
  for (const [k, v] of s.headers) {
    const row = el("tr");
    row.appendChild(el("th", k));
    row.appendChild(el("td", v));
    body.appendChild(row);
  }
  $("m-source").textContent = s.source + (s.truncated ? "\n[… truncated]" : "");
}

async function decide(decision, requestId) {
  const rid = requestId || (state.message && state.message.request_id);
  if (!rid) return;
  try {
    const r = await api("/ui/api/messages/" + encodeURIComponent(rid) + "/decision", {
      method: "POST",
      headers: { "content-type": "application/json", "x-csrf-token": state.session.csrf },
      body: JSON.stringify({ decision }),
    });
    document.body.dataset.lastDecision = `${r.request_id}:${r.decision}`;
  } catch (e) {
    document.body.dataset.lastDecision = `error:${e.status}`;
    if (!$("message-view").hidden) { $("m-decision").textContent = `refused: ${e.message}`; }
    return;
  }
  if (!$("message-view").hidden) await openMessage(rid, false);
  else await backToQueue(false);
  await loadStats();
}

async function backToQueue(push = true) {
  if (push) history.pushState({}, "", "/ui/");
  state.message = null;
  $("message-view").hidden = true;
  $("queue-view").hidden = false;
  try {
    await loadQueue();
  } catch (e) {  // the store is off, or the session expired: say so instead of a blank page
    $("counts").textContent = `${e.status || ""} ${e.message}`;
  }
}

// --- live panel --------------------------------------------------------------------------

async function loadStats() {
  try {
    const s = await api("/ui/api/stats");
    $("vpm").textContent = s.verdicts_per_minute;
    $("spam-rate").textContent = pct(s.spam_rate);
    $("review-share").textContent = pct(s.review_share);
    $("open-count").textContent = s.queue ? s.queue.open : "–";
  } catch (e) { /* the panel is best-effort */ }
}

// --- keys and start ----------------------------------------------------------------------

function onKey(ev) {
  if (ev.target.closest && ev.target.closest("input, select, textarea")) return;
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const inMessage = !$("message-view").hidden;
  const current = inMessage ? null : (state.items[state.selected] || {}).request_id;
  const keys = {
    j: () => select(1), k: () => select(-1),
    Enter: () => current && openMessage(current),
    o: () => current && openMessage(current),
    s: () => decide("spam", current), h: () => decide("ham", current),
    r: () => decide("release", current),
    Escape: () => inMessage && backToQueue(),
  };
  const fn = keys[ev.key];
  if (fn) { ev.preventDefault(); fn(); }
}

async function start() {
  state.session = await api("/ui/api/session");
  $("who").textContent = state.session.reviewer;
  for (const t of state.session.tasks) $("f-task").appendChild(el("option", t));
  for (const t of state.session.tenants) $("f-tenant").appendChild(el("option", t));
  if (!state.session.admin) $("f-tenant").disabled = true;
  $("filters").addEventListener("submit", (ev) => { ev.preventDefault(); state.selected = 0; loadQueue(); });
  $("back").addEventListener("click", (ev) => { ev.preventDefault(); backToQueue(); });
  $("m-source-box").addEventListener("toggle", loadSource);
  $("decide").addEventListener("click", (ev) => {
    const b = ev.target.closest("button");
    if (b) decide(b.dataset.decision);
  });
  $("logout").addEventListener("click", async () => {
    await fetch("/ui/logout", { method: "POST", headers: { "x-csrf-token": state.session.csrf } });
    location.href = "/ui/";
  });
  document.addEventListener("keydown", onKey);
  window.addEventListener("popstate", () => route(false));
  await route(false);
  await loadStats();
  setInterval(loadStats, 10000);
  document.body.dataset.ready = "1";
}

async function route(push) {
  const prefix = "/ui/message/";
  if (location.pathname.startsWith(prefix)) {
    await openMessage(decodeURIComponent(location.pathname.slice(prefix.length)), push);
  } else {
    backToQueue(push);
  }
}

document.addEventListener("DOMContentLoaded", start);
