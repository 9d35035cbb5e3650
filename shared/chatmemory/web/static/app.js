// The manage page and demo chat: plain JavaScript on the public HTTP API (docs/api.md),
// no build step, no library. Every text from the server goes into the page as text
// (textContent), never as markup. The only thing kept is the token, in sessionStorage:
// it lives as long as the tab.
"use strict";

const TOKEN_KEY = "chatmemory.token";
const NOTE_LIMIT = 400; // PUT /v1/memory/settings refuses a longer note
const ORIGIN_LOOKUP = 10; // recall's k and expand when looking up where a memory came from
const NOTICE_POLLS_MS = [0, 4000, 15000, 60000]; // after each reply: the background write may land
const OLD_NOTICE_MS = 60 * 60 * 1000; // notices older than this at sign-in are not toasted

const state = {
  token: null,
  memories: new Map(), // memory_id → memory, from the last listing
  settings: null,
  conversationId: null,
  seenNotices: new Set(),
  pollTimers: [],
  streaming: false,
};

// ---- small DOM helpers ---------------------------------------------------------------

const $ = (id) => document.getElementById(id);

/** An element with attributes and children (strings become text nodes, never markup). */
function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name === "class") element.className = value;
    else if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

function say(message) {
  $("alert").hidden = true;
  $("status").textContent = message;
}

function complain(message) {
  const alert = $("alert");
  alert.textContent = message;
  alert.hidden = false;
}

let idCounter = 0;
const freshId = (prefix) => `${prefix}-${++idCounter}`;
const day = (iso) => (iso ? String(iso).slice(0, 10) : "");
const titleCase = (name) => name.charAt(0).toUpperCase() + name.slice(1);
const characters = (text) => Array.from(text).length; // code points, as the server counts

// ---- the API ---------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${state.token}`, Accept: "application/json", ...extra };
}

async function failure(response) {
  let code = "error";
  let message = `the server answered ${response.status}`;
  try {
    const body = await response.json();
    if (body && body.error) ({ code, message } = body.error);
  } catch {
    // not the contract's JSON: keep the generic sentence
  }
  if (response.status === 401) signOut("Your sign-in has expired or is not valid here. Run chatmemory open YOUR-ID again.");
  return new ApiError(response.status, code, message);
}

/** Call one route (relative, so the page works under a stage path too); the parsed body. */
async function api(method, path, body) {
  const init = { method, headers: headers() };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  return response.status === 204 ? null : response.json();
}

function reported(action) {
  return (error) => complain(`${action} did not work: ${error.message}.`);
}

// ---- sign-in ---------------------------------------------------------------------------

/**
 * The token from `#token=…` leaves the address bar at once, and signs this tab in only once
 * the person says so (a link someone else made would sign them in as its owner): until
 * then it is kept nowhere but here. The tab's own token (from storage) signs in as before.
 */
function takeTokenFromAddress() {
  const match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (match) history.replaceState(null, "", window.location.pathname + window.location.search);
  const stored = sessionStorage.getItem(TOKEN_KEY);
  const linked = match ? decodeURIComponent(match[1]) : null;
  return { stored, linked: linked && linked !== stored ? linked : null };
}

function askToSignInWith(token) {
  const who = subjectOf(token) || "the account this link names";
  showSignIn();
  $("link-who").textContent = `This link signs you in as ${who}.`;
  $("link-accept").textContent = `Sign in as ${who}`;
  $("link-sign-in").hidden = false;
  $("link-accept").onclick = () => {
    $("link-sign-in").hidden = true;
    sessionStorage.setItem(TOKEN_KEY, token);
    signIn(token);
  };
  $("link-decline").onclick = () => {
    $("link-sign-in").hidden = true;
  };
  $("link-accept").focus();
}

function subjectOf(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload)).sub || "";
  } catch {
    return "";
  }
}

function showSignIn(message) {
  $("app").hidden = true;
  $("who").hidden = true;
  $("sign-in").hidden = false;
  if (message) complain(message);
}

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = null;
  state.pollTimers.forEach(clearTimeout);
  state.pollTimers = [];
  showSignIn(message);
}

async function signIn(token) {
  state.token = token;
  $("who-name").textContent = subjectOf(token) || "you";
  $("who").hidden = false;
  $("sign-in").hidden = true;
  $("app").hidden = false;
  try {
    await loadSettings(); // first: the groups show who is muted
    await loadMemories();
    await pollNotices({ atSignIn: true });
  } catch (error) {
    if (state.token) reported("Loading your memories")(error);
  }
}

// ---- memories --------------------------------------------------------------------------

async function loadMemories() {
  const groups = $("memory-groups");
  groups.setAttribute("aria-busy", "true");
  const listing = await api("GET", "v1/memories?group=persona&status=all");
  state.memories = new Map();
  for (const group of listing.personas) {
    for (const memory of group.memories) state.memories.set(memory.memory_id, memory);
  }
  renderGroups(listing.personas);
  groups.setAttribute("aria-busy", "false");
}

function renderGroups(personas) {
  const muted = new Set(state.settings ? state.settings.muted_personas : []);
  const shown = new Set(personas.map((group) => group.persona));
  // A muted persona that holds nothing is still listed, so it can be unmuted.
  const groups = [...personas];
  for (const persona of muted) {
    if (!shown.has(persona)) groups.push({ persona, memories: [], meter: "0 / 1200" });
  }
  const container = $("memory-groups");
  container.replaceChildren();
  if (groups.length === 0) {
    container.append(
      h("p", { class: "empty" }, "Nothing is remembered about you yet. Tell the demo chat something, ",
        "for example “Remember that I am vegetarian.”"),
    );
    return;
  }
  for (const group of groups) container.append(renderGroup(group, muted.has(group.persona)));
}

function renderGroup(group, isMuted) {
  const titleId = freshId("persona");
  const muteId = freshId("mute");
  const active = group.memories.filter((m) => m.status === "active" && m.kind !== "thread");
  const threads = group.memories.filter((m) => m.status === "active" && m.kind === "thread");
  const past = group.memories.filter((m) => m.status !== "active");
  const name = group.persona === "assistant" ? "Assistant (the default persona)" : titleCase(group.persona);
  return h(
    "section",
    { class: "persona", "aria-labelledby": titleId, "data-persona": group.persona },
    h("h3", { id: titleId }, name),
    h(
      "p",
      { class: "persona-meta" },
      h("span", {}, `Memory block: ${group.meter} characters`),
      h(
        "span",
        { class: "switch-row" },
        h("input", {
          type: "checkbox",
          id: muteId,
          checked: isMuted,
          onchange: (event) => setMuted(group.persona, event.target.checked),
        }),
        h("label", { for: muteId }, `Mute ${titleCase(group.persona)} (it forgets me)`),
      ),
    ),
    active.length
      ? h("ul", { class: "memory-list", "aria-label": `What ${titleCase(group.persona)} believes` }, active.map(renderMemory))
      : h("p", { class: "empty" }, "No memories in use."),
    threads.length
      ? [
          h("h4", {}, "Threads it follows"),
          h("ul", { class: "memory-list", "aria-label": `Threads ${titleCase(group.persona)} follows` }, threads.map(renderMemory)),
        ]
      : null,
    past.length
      ? [
          h("h4", {}, "No longer believed"),
          h("ul", { class: "memory-list past", "aria-label": `What ${titleCase(group.persona)} no longer believes` }, past.map(renderPast)),
        ]
      : null,
  );
}

function retentionMeter(memory) {
  if (typeof memory.retention !== "number" || memory.kind === "thread") return null;
  const percent = Math.round(memory.retention * 100);
  return h(
    "span",
    { class: "retention" },
    h("meter", { min: 0, max: 1, low: 0.5, high: 0.8, optimum: 1, value: memory.retention, "aria-label": `retention ${percent}%` }),
    memory.retention < 0.5 ? " fading" : null,
  );
}

function threadLine(thread) {
  if (!thread) return null;
  const parts = [thread.status];
  if (thread.state) parts.push(thread.state.replace(/_/g, " "));
  if (thread.last_heard) parts.push(`last heard ${thread.last_heard}`);
  if (thread.event_on) parts.push(`on ${thread.event_on}`);
  return h("span", { class: "thread-state" }, `thread: ${parts.join(" · ")}`);
}

function renderMemory(memory) {
  const originId = freshId("origin");
  const item = h("li", { class: "memory", "data-memory-id": memory.memory_id });
  const text = h("p", { class: "memory-text" }, memory.text);
  const meta = h(
    "p",
    { class: "memory-meta" },
    h("span", {}, [memory.kind.replace(/_/g, " "), memory.category].filter(Boolean).join(" · ")),
    h("span", {}, memory.stated_by === "user" ? "you said it, " : "inferred, ", h("time", { datetime: memory.created_at }, day(memory.created_at))),
    memory.due_in && memory.kind !== "thread" ? h("span", { class: "due" }, memory.due_in.text) : null,
    threadLine(memory.thread),
    retentionMeter(memory),
  );
  const origin = h("div", { class: "origin", id: originId, hidden: true });
  const originButton = h(
    "button",
    { type: "button", class: "quiet", "aria-expanded": "false", "aria-controls": originId },
    "Where from?",
  );
  originButton.addEventListener("click", () => toggleOrigin(memory, originButton, origin));
  const actions = h(
    "div",
    { class: "row actions" },
    originButton,
    h("button", { type: "button", class: "quiet", onclick: () => openCorrection(memory, item) },
      "Correct", h("span", { class: "visually-hidden" }, `: ${memory.text}`)),
    h("button", { type: "button", class: "danger quiet", onclick: () => deleteMemory(memory) },
      "Delete", h("span", { class: "visually-hidden" }, `: ${memory.text}`)),
  );
  item.append(text, meta, actions, origin);
  return item;
}

function renderPast(memory) {
  const why = memory.status === "archived" && memory.archived ? `archived (${memory.archived})` : memory.status;
  return h(
    "li",
    { class: "memory past", "data-memory-id": memory.memory_id },
    h("p", { class: "memory-text" }, memory.text),
    h(
      "p",
      { class: "memory-meta" },
      h("span", {}, why),
      memory.arc ? h("span", { class: "arc" }, `believed ${memory.arc}`) : null,
      threadLine(memory.thread),
    ),
  );
}

async function toggleOrigin(memory, button, origin) {
  const opening = button.getAttribute("aria-expanded") !== "true";
  button.setAttribute("aria-expanded", String(opening));
  origin.hidden = !opening;
  if (!opening || origin.childElementCount) return;
  origin.append(h("p", { class: "hint" }, "Looking it up…"));
  try {
    const found = await api("POST", "v1/recall", {
      query: memory.text,
      k: ORIGIN_LOOKUP,
      expand: ORIGIN_LOOKUP,
      persona: memory.persona,
    });
    const item = found.items.find((candidate) => candidate.memory_id === memory.memory_id);
    origin.replaceChildren(...describeOrigin(item));
  } catch (error) {
    origin.replaceChildren(h("p", { class: "hint" }, `Its origin could not be looked up: ${error.message}.`));
  }
}

function describeOrigin(item) {
  if (!item) {
    return [h("p", { class: "hint" }, "Its origin cannot be shown now (memory may be off, or the persona muted).")];
  }
  const parts = [h("p", {}, item.reasoning || "")];
  if (item.evidence && item.evidence.length) {
    parts.push(
      h("p", { class: "hint" }, "The messages it rests on:"),
      h(
        "ul",
        { class: "evidence" },
        item.evidence.map((message) =>
          h("li", {}, h("blockquote", {}, message.text),
            h("span", { class: "hint" }, `${message.role === "user" ? "you" : "the assistant"}, ${day(message.created_at)}`)),
        ),
      ),
    );
  } else {
    parts.push(h("p", { class: "hint" }, "No message to show: you added it yourself, or the message is gone."));
  }
  return parts;
}

function openCorrection(memory, item) {
  if (item.querySelector("form")) return item.querySelector("textarea").focus();
  const fieldId = freshId("correct");
  const field = h("textarea", { id: fieldId, rows: 2, maxlength: 2000 });
  field.value = memory.text;
  const close = () => {
    form.remove();
    item.querySelector(".actions button:nth-child(2)").focus();
  };
  const form = h(
    "form",
    { class: "stack correction", novalidate: true },
    h("label", { for: fieldId }, "Corrected text"),
    field,
    h("div", { class: "row" },
      h("button", { type: "submit" }, "Save correction"),
      h("button", { type: "button", class: "quiet", onclick: close }, "Cancel")),
  );
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") close();
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = field.value.trim();
    if (!text) return complain("A correction needs some text.");
    try {
      const corrected = await api("PATCH", `v1/memories/${encodeURIComponent(memory.memory_id)}`, { text });
      await loadMemories();
      say(`Corrected: ${corrected.text}`);
      $("memories-title").focus();
    } catch (error) {
      reported("The correction")(error);
    }
  });
  item.append(form);
  field.focus();
}

async function deleteMemory(memory) {
  try {
    await api("DELETE", `v1/memories/${encodeURIComponent(memory.memory_id)}`);
    await loadMemories();
    say(`Deleted: ${memory.text}`);
    $("memories-title").focus();
  } catch (error) {
    reported("Deleting")(error);
  }
}

async function exportMemories() {
  try {
    const response = await fetch("v1/memories/export", { headers: headers() });
    if (response.status === 404) {
      return complain("Export is not available on this server yet.");
    }
    if (!response.ok) throw await failure(response);
    const blob = await response.blob();
    const link = h("a", { href: URL.createObjectURL(blob), download: `chatmemory-export-${day(new Date().toISOString())}.json` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
    say("Your export is downloading.");
  } catch (error) {
    reported("The export")(error);
  }
}

// ---- settings --------------------------------------------------------------------------

async function loadSettings() {
  state.settings = await api("GET", "v1/memory/settings");
  $("enabled").checked = state.settings.enabled;
  $("note").value = state.settings.note || "";
  updateNoteMeter();
}

async function putSettings(change) {
  state.settings = await api("PUT", "v1/memory/settings", change);
  return state.settings;
}

async function setEnabled(enabled) {
  try {
    await putSettings({ enabled });
    say(enabled ? "Memory is on." : "Memory is off: nothing is read or written from your next message on.");
  } catch (error) {
    $("enabled").checked = !enabled;
    reported("Switching memory")(error);
  }
}

async function setMuted(persona, mute) {
  const muted = new Set(state.settings.muted_personas);
  if (mute) muted.add(persona);
  else muted.delete(persona);
  try {
    await putSettings({ muted_personas: [...muted] });
    await loadMemories();
    say(mute ? `${titleCase(persona)} is muted: it reads and writes nothing about you.` : `${titleCase(persona)} is unmuted.`);
  } catch (error) {
    reported("Muting")(error);
  }
}

let noteAnnouncement = null;

function updateNoteMeter() {
  const count = characters($("note").value);
  const over = count > NOTE_LIMIT;
  const meter = $("note-meter");
  meter.textContent = over ? `${count} / ${NOTE_LIMIT}: ${count - NOTE_LIMIT} too many` : `${count} / ${NOTE_LIMIT}`;
  meter.classList.toggle("over", over);
  $("note").setAttribute("aria-invalid", String(over));
  $("save-note").disabled = over;
  // Said to a screen reader once typing pauses, not on every key.
  clearTimeout(noteAnnouncement);
  noteAnnouncement = setTimeout(() => {
    $("note-live").textContent = over
      ? `${count - NOTE_LIMIT} characters too many`
      : `${NOTE_LIMIT - count} characters left`;
  }, 700);
}

async function saveNote(event) {
  event.preventDefault();
  const note = $("note").value;
  if (characters(note) > NOTE_LIMIT) {
    return complain(`The note is longer than ${NOTE_LIMIT} characters; shorten it to save.`);
  }
  try {
    await putSettings({ note });
    say("Note saved.");
  } catch (error) {
    reported("Saving the note")(error);
  }
}

function askToForgetEverything() {
  $("forget-dialog").showModal();
  $("forget-cancel").focus();
}

async function forgetEverything() {
  $("forget-dialog").close();
  try {
    await api("DELETE", "v1/memories");
    await loadMemories();
    say("Everything is forgotten. Copies are being purged.");
    $("memories-title").focus();
  } catch (error) {
    reported("Forgetting everything")(error);
  }
}

// ---- the demo chat ---------------------------------------------------------------------

// How the page names the prompt block a used memory came through.
const USED_BLOCKS = [
  ["memories", "recalled for this message"],
  ["threads", "stories followed"],
  ["profile", "profile"],
  ["persona_block", "the persona's block"],
];

function labelOf(memoryId) {
  const memory = state.memories.get(memoryId);
  return memory ? memory.text : "a memory no longer shown";
}

function appendTurn(role, text) {
  const body = h("p", { class: "turn-text" }, text);
  const turn = h("li", { class: `turn ${role}` }, h("p", { class: "who" }, role === "user" ? "You" : "chatmemory"), body);
  $("chat-log").append(turn);
  followConversation();
  return { turn, body };
}

/** Keep the newest words in view while a reply streams in. */
function followConversation() {
  const log = $("chat-log");
  log.scrollTop = log.scrollHeight;
}

/** The SSE blocks of a streamed turn: `event: token` pieces, then `done` (or `error`). */
function parseEvent(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  return { event, data: data.length ? JSON.parse(data.join("\n")) : null };
}

async function* streamedEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer = (buffer + decoder.decode(value, { stream: true })).replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (block.trim()) yield parseEvent(block);
    }
  }
}

async function sendMessage(text) {
  const log = $("chat-log");
  appendTurn("user", text);
  const reply = appendTurn("assistant", "");
  reply.turn.setAttribute("aria-busy", "true");
  log.setAttribute("aria-busy", "true"); // the reply is read out once, when it is whole
  state.streaming = true;
  $("send").disabled = true;
  const body = { message: text };
  if (state.conversationId) body.conversation_id = state.conversationId;
  try {
    const response = await fetch("v1/chat", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify(body),
    });
    if (!response.ok) throw await failure(response);
    let done = null;
    if ((response.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
      for await (const { event, data } of streamedEvents(response)) {
        if (event === "token") {
          reply.body.textContent += data.text;
          followConversation();
        }
        else if (event === "done") done = data;
        else if (event === "error") throw new ApiError(502, data.error.code, data.error.message);
      }
    } else {
      done = await response.json(); // a gateway that cannot stream answers the whole turn
    }
    if (!done) throw new ApiError(502, "incomplete", "the reply was cut off");
    reply.body.textContent = done.reply;
    state.conversationId = done.conversation_id;
    await finishTurn(reply.turn, done);
  } catch (error) {
    reply.body.textContent = `Not answered: ${error.message}.`;
    reply.turn.classList.add("failed");
  } finally {
    reply.turn.setAttribute("aria-busy", "false");
    log.setAttribute("aria-busy", "false");
    state.streaming = false;
    $("send").disabled = false;
  }
}

async function finishTurn(turn, done) {
  try {
    await loadMemories(); // saved memories appear, and used ids get their labels
  } catch (error) {
    reported("Refreshing your memories")(error);
  }
  const lines = [];
  const used = done.memories_used_in || done.memories_used.map((memory_id) => ({ memory_id, block: "memories" }));
  if (used.length) {
    // Every memory whose words were in the prompt, by the block that carried it.
    const parts = [];
    for (const [block, title] of USED_BLOCKS) {
      const labels = used.filter((item) => item.block === block).map((item) => labelOf(item.memory_id));
      if (labels.length) parts.push(`${title}: ${labels.join(" · ")}`);
    }
    lines.push(h("p", { class: "used" }, "Memories used — ", parts.join("; ")));
  }
  if (done.saved.length) {
    lines.push(h("p", { class: "used" }, "Saved now: ", done.saved.map(labelOf).join(" · ")));
  }
  turn.append(...lines);
  followConversation();
  scheduleNoticePolls();
}

function scheduleNoticePolls() {
  state.pollTimers.forEach(clearTimeout);
  state.pollTimers = NOTICE_POLLS_MS.map((delay) => setTimeout(() => pollNotices().catch(() => {}), delay));
}

// ---- notices ("noted: … · undo") ------------------------------------------------------

async function pollNotices({ atSignIn = false } = {}) {
  if (!state.token) return;
  const { notices } = await api("GET", "v1/notices");
  for (const notice of [...notices].reverse()) {
    if (state.seenNotices.has(notice.notice_id)) continue;
    state.seenNotices.add(notice.notice_id);
    const age = Date.now() - Date.parse(notice.created_at);
    if (atSignIn && age > OLD_NOTICE_MS) continue; // old news: the list shows it
    showToast(notice);
  }
}

function showToast(notice) {
  const text = h("p", { class: "toast-text" }, notice.text);
  const dismiss = h("button", { type: "button", class: "quiet", "aria-label": "Dismiss notice" }, "Dismiss");
  const undo = h("button", { type: "button" }, "Undo");
  const toast = h("div", { class: "toast", role: "group", "aria-label": "Notice" }, text, h("div", { class: "row" }, undo, dismiss));
  dismiss.addEventListener("click", () => {
    toast.remove();
    $("main").focus();
  });
  undo.addEventListener("click", async () => {
    undo.disabled = true;
    try {
      const undone = await api("POST", `v1/notices/${encodeURIComponent(notice.notice_id)}/undo`);
      undo.remove();
      const count = undone.deleted.length;
      text.textContent = count ? `Undone: ${count === 1 ? "one memory" : `${count} memories`} forgotten again.` : "Nothing left to undo.";
      dismiss.focus();
      await loadMemories();
    } catch (error) {
      undo.disabled = false;
      reported("Undo")(error);
    }
  });
  $("toasts").append(toast);
  followConversation(); // the notice takes room from the conversation
}

// ---- wiring ----------------------------------------------------------------------------

function wire() {
  $("sign-in-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token-input").value.trim();
    if (!token) return complain("Paste a token first.");
    sessionStorage.setItem(TOKEN_KEY, token);
    $("token-input").value = "";
    signIn(token);
  });
  $("sign-out").addEventListener("click", () => signOut());
  $("refresh").addEventListener("click", () => loadMemories().then(() => say("Up to date."), reported("Refreshing")));
  $("export").addEventListener("click", exportMemories);
  $("enabled").addEventListener("change", (event) => setEnabled(event.target.checked));
  $("note").addEventListener("input", updateNoteMeter);
  $("note-form").addEventListener("submit", saveNote);
  $("forget-all").addEventListener("click", askToForgetEverything);
  $("forget-cancel").addEventListener("click", () => $("forget-dialog").close());
  $("forget-confirm").addEventListener("click", forgetEverything);
  $("chat-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("chat-input");
    const text = input.value.trim();
    if (!text || state.streaming) return;
    input.value = "";
    sendMessage(text);
  });
  $("chat-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("chat-form").requestSubmit();
    }
  });
  $("new-conversation").addEventListener("click", () => {
    state.conversationId = null;
    $("chat-log").replaceChildren();
    say("A new conversation starts with your next message.");
    $("chat-input").focus();
  });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible" && state.token) pollNotices().catch(() => {});
  });
}

wire();
const { stored, linked } = takeTokenFromAddress();
if (linked) askToSignInWith(linked);
else if (stored) signIn(stored);
else showSignIn();
