// The approval page. Every value from the server is put in the page with `textContent`, never as
// markup: arguments, tool names, descriptions and reasons come from models, upstreams and configs.
"use strict";

const POLL_MS = 2000;
let csrf = null;
let clockSkew = 0; // server time minus local time, from each poll
const cards = new Map(); // approval id -> { card, request, timeLeft }

const $ = (id) => document.getElementById(id);

// Characters that show nothing where they stand (controls, zero-width and bidi controls, every
// default-ignorable and format character) are shown as escapes, in every field: `alice\u{200B}`
// must not look like alice, and U+202E must not turn the text after it around. Line breaks and
// tabs in arguments stay as they are.
const HIDDEN = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;

function visible(text) {
  return String(text).replace(HIDDEN, (c) =>
    c === "\n" || c === "\t" ? c : "\\u{" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "}");
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = visible(text);
  return node;
}

async function api(path, body) {
  // The token goes with every request: the server answers only the session it belongs to.
  const options = { credentials: "same-origin", headers: { "x-toolgate-csrf": csrf || "" } };
  if (body !== undefined) {
    options.method = "POST";
    options.headers["content-type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch("/approvals/api/" + path, options);
  let data = {};
  try { data = await response.json(); } catch (_) { /* an empty or non-JSON body */ }
  return { status: response.status, data };
}

// The session this tab signed in with, pinned in the tab's own storage (per origin: a page on
// another port of this host cannot read or write it). A cookie replaced under the page does not
// carry this token, so the page notices instead of working as someone else.
const PINNED = "toolgate-approvals-csrf";

function signedIn(session) {
  csrf = session.csrf;
  sessionStorage.setItem(PINNED, csrf);
  $("approver").textContent = visible(session.approver);
  $("groups").textContent = visible(session.groups.length ? "(groups: " + session.groups.join(", ") + ")" : "(no group)");
  $("who").hidden = false;
  $("signin").hidden = true;
  $("work").hidden = false;
  poll();
  refreshAudit();
}

function signedOut(message) {
  csrf = null;
  sessionStorage.removeItem(PINNED);
  $("signin-error").textContent = visible(message || "");
  $("who").hidden = true;
  $("work").hidden = true;
  $("signin").hidden = false;
  showSignInWays();
}

// The ways to sign in the server offers: links to sign-ins it runs outside the page (its
// OpenID provider, say), and the credential form unless turned off.
async function showSignInWays() {
  const { status, data } = await api("sign-in");
  if (status !== 200) return;
  const links = $("signin-links");
  links.textContent = "";
  for (const way of data.links) {
    const link = document.createElement("a");
    link.href = way.path;
    link.textContent = visible(way.label);
    link.className = "button";
    // The session the link brings back is a new one: this tab's pin is for the one before.
    link.addEventListener("click", () => sessionStorage.removeItem(PINNED));
    links.append(link);
  }
  links.hidden = data.links.length === 0;
  $("signin-form").hidden = !data.credential;
  $("signin-credential-help").hidden = !data.credential;
}

function timeLeft(request) {
  if (request.expires_at_ms === null || request.expires_at_ms === undefined) return "does not expire";
  const left = request.expires_at_ms - (Date.now() + clockSkew);
  if (left <= 0) return "expired";
  const seconds = Math.floor(left / 1000);
  const minutes = Math.floor(seconds / 60);
  return "expires in " + (minutes ? minutes + " min " : "") + (seconds % 60) + " s";
}

function row(list, term, value, className) {
  list.append(element("dt", null, term));
  list.append(element("dd", className, value));
}

function card(request) {
  const node = element("article", "call");
  node.dataset.approvalId = request.id;
  node.append(element("h3", "tool", request.tool));
  const facts = element("dl");
  row(facts, "upstream", request.upstream === null || request.upstream === undefined ? "(none named)" : request.upstream, "upstream");
  // The description is the upstream's own words, shown as it wrote them; the gateway vouches for
  // the other facts.
  row(facts, "tool description (written by the upstream, not checked)", request.description === null ? "(none)" : request.description, "description");
  row(facts, "asked by", request.principal === null ? "(no principal)" : request.principal, "principal");
  row(facts, "why you are asked", request.reason, "reason");
  row(facts, "time left", timeLeft(request), "time-left");
  row(facts, "who may answer", request.approvers.length ? request.approvers.join(" and ") : "anyone signed in", "approvers");
  row(facts, "approval id", request.id, "digest");
  if (request.digest !== null) {
    row(facts, "digest", request.digest, "digest");
  }
  node.append(facts);
  if (request.may_answer) {
    node.append(element("p", null, "Arguments, all " + request.argument_chars + " characters:"));
    node.append(element("pre", "arguments", request.arguments));
  }
  const note = element("textarea", "note");
  note.placeholder = "note for the audit log (optional)";
  note.maxLength = 2000;
  node.append(note);
  const approve = element("button", "approve", "Approve and run once");
  const reject = element("button", "reject", "Reject");
  approve.type = reject.type = "button";
  approve.addEventListener("click", () => answer(request, "approve", node));
  reject.addEventListener("click", () => answer(request, "reject", node));
  node.append(approve, reject);
  if (!request.may_answer) {
    // Shown, so the person knows the call waits; not answerable here, so the buttons are off.
    approve.disabled = reject.disabled = true;
    note.disabled = true;
    node.append(element("p", "error cannot", "You cannot answer this call, so its arguments are not shown: " + request.why_not));
  }
  node.append(element("p", "outcome", ""));
  return node;
}

function settle(node, message, className) {
  node.classList.add("gone");
  for (const button of node.querySelectorAll("button")) button.disabled = true;
  const outcome = node.querySelector(".outcome");
  outcome.className = "outcome " + className;
  outcome.textContent = visible(message);
}

async function answer(request, verdict, node) {
  const note = node.querySelector(".note").value;
  for (const button of node.querySelectorAll("button")) button.disabled = true;
  const { status, data } = await api("answer", { id: request.id, digest: request.digest, verdict, note });
  const outcome = node.querySelector(".outcome");
  if (status === 200) {
    let text;
    if (verdict === "reject") text = "Rejected by " + data.by + ": it did not run.";
    else if (data.is_error) text = "Approved by " + data.by + ", but it did not succeed: " + data.content;
    else text = "Approved by " + data.by + ": it ran once. Its result:";
    settle(node, text, data.is_error ? "error" : "ok");
    if (verdict === "approve" && !data.is_error) node.append(element("pre", "result", data.content));
    cards.delete(request.id);
    refreshAnswered();
  } else {
    outcome.className = "outcome error";
    outcome.textContent = visible("Refused (" + status + "): " + (data.error || "no reason given"));
    if (status === 409) settle(node, outcome.textContent, "error");
    else for (const button of node.querySelectorAll("button")) button.disabled = false;
    if (status === 401) signedOut(data.error);
  }
}

async function poll() {
  if (!csrf) return;
  const { status, data } = await api("pending");
  if (status === 401 || status === 403) { signedOut(data.error); return; }
  if (status !== 200) {
    $("status").textContent = visible("Cannot read the waiting calls: " + (data.error || status));
    return;
  }
  $("status").textContent = "";
  clockSkew = data.now_ms - Date.now();
  const seen = new Set();
  for (const request of data.pending) {
    seen.add(request.id);
    if (!cards.has(request.id)) {
      const node = card(request);
      $("pending").append(node);
      cards.set(request.id, { node, request });
    }
  }
  for (const [id, entry] of cards) {
    if (!seen.has(id)) {
      settle(entry.node, "No longer waiting: answered elsewhere, expired or withdrawn.", "notice");
      cards.delete(id);
    }
  }
  $("count").textContent = "(" + data.pending.length + ")";
  $("none").hidden = data.pending.length > 0;
  refreshAnswered();
}

function tick() {
  for (const { node, request } of cards.values()) {
    node.querySelector(".time-left").textContent = timeLeft(request);
  }
}

async function refreshAnswered() {
  const { status, data } = await api("answered");
  if (status !== 200) return;
  const list = $("answered");
  list.replaceChildren();
  for (const entry of data.answered.slice().reverse()) {
    const outcome = entry.verdict === "reject" ? "rejected" : entry.is_error ? "approved, did not succeed" : "approved, ran once";
    const asked = entry.requested_at_ms ? new Date(entry.requested_at_ms).toLocaleTimeString() : "?";
    list.append(element("li", null, new Date(entry.time_ms).toLocaleTimeString() + " · " + entry.tool + " · " + outcome + " · by " + entry.by
      + " · asked by " + (entry.asked_by || "(no principal)") + " at " + asked + " · approval " + entry.id));
  }
}

async function refreshAudit() {
  const { status, data } = await api("audit");
  const chain = $("chain");
  const body = $("audit").querySelector("tbody");
  body.replaceChildren();
  if (status !== 200) { chain.textContent = visible("Cannot read the audit log: " + (data.error || status)); chain.className = "error"; return; }
  if (!data.configured) { chain.textContent = "No audit log is shown here."; chain.className = ""; return; }
  const snapshot = data.snapshot;
  chain.textContent = visible((snapshot.verified ? "Chain verifies: " : "Chain does NOT verify: ") + snapshot.chain);
  chain.className = snapshot.verified ? "ok" : "error";
  for (const event of snapshot.events.slice().reverse()) {
    const tr = element("tr");
    for (const value of [new Date(event.time_ms).toLocaleString(), event.kind, event.tool, event.call_id, event.principal, event.approver, event.note]) {
      tr.append(element("td", null, value === undefined ? "" : value));
    }
    body.append(tr);
  }
}

document.addEventListener("DOMContentLoaded", async () => {
  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const { status, data } = await api("login", { credential: $("credential").value });
    $("credential").value = "";
    if (status === 200) { $("signin-error").textContent = ""; signedIn(data); }
    else $("signin-error").textContent = visible(data.error || "sign-in failed (" + status + ")");
  });
  $("logout").addEventListener("click", async () => { await api("logout", {}); signedOut(); });
  $("audit-refresh").addEventListener("click", refreshAudit);
  setInterval(poll, POLL_MS);
  setInterval(tick, 1000);
  const { status, data } = await api("session");
  const pinned = sessionStorage.getItem(PINNED);
  if (status === 200 && pinned && pinned !== data.csrf) {
    // Not this tab's session: end it (its cookie goes with it), then ask for a sign-in.
    csrf = data.csrf;
    await api("logout", {});
    signedOut("The session behind this page changed since you signed in (another site on this host may have set a cookie); it is ended: sign in again.");
  } else if (status === 200) {
    signedIn(data);
  } else {
    signedOut(data.error === "sign in first" ? "" : data.error);
  }
});
