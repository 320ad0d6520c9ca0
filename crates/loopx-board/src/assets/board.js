// The loopx board page. Everything an agent wrote (titles, questions, transcripts) is put on
// the page as text (textContent), never as markup. State arrives pushed over one
// server-sent event stream; the page never polls. Changes are POSTed with the board's header,
// and the page shows the CLI's own answer or refusal. The address's one-time code (in the
// fragment, never sent to a server) is traded for the session, kept in this tab only.
"use strict";

let session = sessionStorage.getItem("loopx-session");

let state = null;
// With `loopx board --all`: the whole view as last pushed, and the project shown (by id, as
// the board names it; a change goes to /api/projects/<id>/…).
let all = null;
let project = sessionStorage.getItem("loopx-project");
// The gates as last drawn: redrawn only when they change, so a half-typed answer survives
// the pushes a running slice makes every second.
let drawnGates = null;
// Server time minus page time, for countdowns that agree with the kernel's clock.
let skew = 0;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function ms(at) { return at ? Date.parse(at) : NaN; }

function short(secs) {
  secs = Math.max(0, Math.round(secs));
  if (secs < 60) return secs + "s";
  if (secs < 3600) return Math.floor(secs / 60) + "m " + (secs % 60) + "s";
  if (secs < 86400) return Math.floor(secs / 3600) + "h " + Math.floor((secs % 3600) / 60) + "m";
  return Math.floor(secs / 86400) + "d " + Math.floor((secs % 86400) / 3600) + "h";
}

function relative(at) {
  const t = ms(at);
  if (isNaN(t)) return "";
  const delta = (t - (Date.now() + skew)) / 1000;
  if (Math.abs(delta) < 1) return "now";
  return delta > 0 ? "in " + short(delta) : short(-delta) + " ago";
}

async function act(path, body) {
  const problem = document.getElementById("problem");
  if (all) path = "/api/projects/" + encodeURIComponent(project || "") + path.slice("/api".length);
  try {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Loopx-Board": "1", "X-Loopx-Session": session || "" },
      body: JSON.stringify(body),
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      problem.textContent = answer.error || ("refused: HTTP " + response.status);
      problem.hidden = false;
      return false;
    }
    problem.hidden = true;
    return true;
  } catch (e) {
    problem.textContent = "the board is not reachable: " + e;
    problem.hidden = false;
    return false;
  }
}

// The goal a todo added from the page is for: shown when several goals are active, keeping
// the person's choice across refreshes while that goal is still active.
function renderGoalPicker(goals) {
  const picker = document.getElementById("add-goal");
  const chosen = picker.value;
  picker.replaceChildren(
    ...goals.map((g) => el("option", { value: g.id, text: g.id + " · " + g.objective })),
  );
  picker.hidden = goals.length < 2;
  if (goals.some((g) => g.id === chosen)) picker.value = chosen;
}

function renderHeader(s) {
  const goal = s.status.goal;
  const goals = s.status.goals || [];
  renderGoalPicker(goals);
  // Several active goals: each, in the order agents serve them.
  document.getElementById("goal").textContent = goals.length > 1
    ? goals.map((g) => g.id + " · " + g.objective + " (priority " + g.priority + ")").join("  |  ")
    : goal
      ? goal.id + " · " + goal.objective + " (" + goal.status + ")"
      : "no goal yet";
  const c = s.status.counts || {};
  const running = (s.status.running || []).length;
  document.getElementById("counts").textContent =
    (c.open ?? 0) + " open · " + (c.claimed ?? 0) + " claimed · " + running +
    (running === 1 ? " slice" : " slices") + " running · " + (c.done ?? 0) + " done";
}

function renderGates(s) {
  const box = document.getElementById("gates");
  const gates = s.status.needs_you || [];
  // A person learns that a question waits from the tab too, without looking at the page.
  document.title = (gates.length ? "(" + gates.length + ") " : "") + "loopx board";
  const key = JSON.stringify(gates);
  if (key === drawnGates) return;
  drawnGates = key;
  // What the person was typing, and where, survives the redraw.
  const typed = new Map([...box.querySelectorAll("[data-gate]")].map((node) => {
    const input = node.querySelector("input");
    return [node.getAttribute("data-gate"), { value: input.value, focused: document.activeElement === input }];
  }));
  box.replaceChildren();
  if (gates.length === 0) {
    box.append(el("p", { class: "nothing", text: "Nothing waits on you." }));
    return;
  }
  for (const { gate, answer_command } of gates) {
    const node = el("div", { class: "gate", "data-gate": gate.id });
    node.append(el("div", { class: "question" }, el("span", { class: "id", text: gate.id + " " }), gate.question));
    const kind = typeof gate.kind === "string" ? gate.kind : Object.keys(gate.kind)[0];
    const asker = gate.asked_by === "loopx" || kind !== "question"
      ? "opened by loopx (" + kind + ")" : "asked by " + gate.asked_by;
    node.append(el("div", { class: "meta" }, asker + " · ", el("span", { "data-at": gate.created_at, text: relative(gate.created_at) })));
    if (gate.context) node.append(el("pre", { class: "context", text: gate.context }));
    // A question with options is answered by one of them (words would be taken as some
    // choice, silently): the text field is then a note sent with the button pressed.
    const input = el("input", {
      placeholder: gate.options.length ? "note for the next slice (optional), then choose…" : "your answer…",
      class: gate.options.length ? "answer-note" : "answer-text",
    });
    if (gate.options.length > 0) {
      const options = el("div", { class: "options" });
      gate.options.forEach((option, i) => {
        options.append(el("button", {
          class: "option", "data-option": String(i + 1),
          onclick: () => {
            const note = input.value.trim();
            answer(node, note ? { gate: gate.id, option: i + 1, note } : { gate: gate.id, option: i + 1 });
          },
        }, (i + 1) + ". " + option));
      });
      node.append(options);
      node.append(input);
    } else {
      node.append(el("form", {
        onsubmit: (e) => {
          e.preventDefault();
          if (input.value.trim()) answer(node, { gate: gate.id, answer: input.value });
        },
      }, input, el("button", { type: "submit" }, "Answer")));
    }
    // With --all, the command is the project's: it says where to run it.
    const where = all ? "or, in " + ((all.projects.find((p) => p.id === project) || {}).glance || {}).root + ": " : "or: ";
    node.append(el("div", { class: "meta" }, where, el("code", { text: answer_command })));
    box.append(node);
    const was = typed.get(gate.id);
    if (was) {
      input.value = was.value;
      if (was.focused) input.focus();
    }
  }
}

// One answer per gate: its buttons wait while the answer is on its way.
async function answer(node, body) {
  const buttons = node.querySelectorAll("button");
  buttons.forEach((b) => { b.disabled = true; });
  const ok = await act("/api/answer", body);
  if (!ok) buttons.forEach((b) => { b.disabled = false; });
}

function heldKeys(s) {
  return new Set(((s.quota && s.quota.holds) || []).map((h) => h.key));
}

function renderAgents(s) {
  const body = document.querySelector("#agents tbody");
  body.replaceChildren();
  const held = heldKeys(s);
  for (const agent of s.status.agents || []) {
    const slice = agent.running;
    const now = slice ? "running " + slice : (agent.decision || "?");
    const paused = held.has("agent:" + agent.agent);
    const button = paused
      ? el("button", { onclick: () => act("/api/resume", { agent: agent.agent }) }, "Resume")
      : el("button", { onclick: () => act("/api/pause", { agent: agent.agent }) }, "Pause");
    body.append(el("tr", { "data-agent": agent.agent },
      el("td", { text: agent.agent }),
      el("td", { text: now + (agent.todo ? " " + agent.todo : "") }),
      el("td", { class: "wake", "data-at": agent.wake_at || "", text: agent.wake_at ? relative(agent.wake_at) : "" }),
      el("td", { text: agent.summary }),
      el("td", {}, button, " ", el("button", { onclick: () => say(agent.agent) }, "Message"))));
  }
}

// A person's message: into the agent's running Claude Code session, else it heads its next
// slice's prompt (`loopx say`).
function say(agent) {
  const text = window.prompt("Message to " + agent + " (into its running Claude Code session, else its next slice's prompt):");
  if (text && text.trim()) act("/api/say", { agent, text });
}

function renderQuota(s) {
  const box = document.getElementById("quota");
  box.replaceChildren();
  const quota = s.quota || {};
  const holds = quota.holds || [];
  const list = el("ul");
  for (const hold of holds) {
    list.append(el("li", {},
      el("strong", { text: hold.key }), " held ",
      hold.until ? el("span", { class: "wake", "data-at": hold.until, text: "until " + relative(hold.until) }) : "until resumed",
      " — " + hold.reason + " ",
      el("button", {
        onclick: () => act("/api/resume", hold.key.startsWith("agent:") ? { agent: hold.key.slice(6) } : { account: hold.key }),
      }, "Resume")));
  }
  const accounts = new Set();
  for (const agent of quota.agents || []) {
    for (const w of agent.windows || []) {
      const left = w.tokens_left != null ? w.tokens_left + " of " + w.tokens_limit + " tokens" : "";
      const cost = w.cost_left_usd != null ? "$" + w.cost_left_usd.toFixed(2) + " of $" + w.cost_limit_usd.toFixed(2) : "";
      list.append(el("li", {}, agent.account + " · " + agent.agent + ": " + short(w.period_secs) + " window, " +
        [left, cost].filter(Boolean).join(", ") + " left",
        w.resets_at ? el("span", { class: "wake", "data-at": w.resets_at, text: ", resets " + relative(w.resets_at) }) : ""));
    }
    if (!accounts.has(agent.account) && !holds.some((h) => h.key === agent.account)) {
      accounts.add(agent.account);
      list.append(el("li", {}, "account " + agent.account + " ",
        el("button", { onclick: () => act("/api/pause", { account: agent.account }) }, "Pause account")));
    }
  }
  if (!list.children.length) list.append(el("li", { class: "nothing", text: "No holds, no windows set." }));
  box.append(list);
}

// `10m`, `1h 30m`, `45s`: a cadence in words.
function duration(ms) {
  const secs = Math.round(ms / 1000);
  if (secs < 60) return secs + "s";
  if (secs < 3600) return Math.floor(secs / 60) + "m" + (secs % 60 ? " " + (secs % 60) + "s" : "");
  return Math.floor(secs / 3600) + "h" + (secs % 3600 >= 60 ? " " + Math.floor((secs % 3600) / 60) + "m" : "");
}

function card(todo, column, s) {
  const node = el("div", { class: "card", "data-todo": todo.id });
  node.append(el("div", { class: "title" }, el("span", { class: "id", text: todo.id }), todo.title));
  const meta = el("div", { class: "meta" });
  if ((s.status.goals || []).length > 1) meta.append(el("span", { class: "chip", text: "goal " + todo.goal }));
  if (todo.priority) meta.append(el("span", { class: "chip", text: "priority " + todo.priority }));
  for (const wait of todo.waits_on || []) meta.append(el("span", { class: "chip", text: wait }));
  if (todo.gate) meta.append(el("span", { class: "chip gate-chip", text: "gate " + todo.gate.id + ": " + todo.gate.question }));
  if (todo.monitor) {
    const m = todo.monitor;
    meta.append(el("div", { class: "check", text: "$ " + m.check }));
    meta.append(el("span", { class: "chip", text: "every " + duration(m.every_ms) }));
    if (m.next_at) meta.append(el("span", { class: "chip wake", "data-at": m.next_at, text: "next poll " + relative(m.next_at) }));
    if (m.expires_at) meta.append(el("span", { class: "chip", text: "expires " + relative(m.expires_at) }));
    const last = m.last
      ? "last: " + m.last.verdict.replace("_", " ") + (m.last.exit === null ? "" : " (exit " + m.last.exit + ")") + (m.last.line ? ": " + m.last.line : "")
      : "not polled yet";
    meta.append(el("div", { class: "last-poll", text: last + " · " + m.polls + " poll(s)" }));
  }
  if (todo.lease) {
    meta.append(el("div", { text: todo.lease.agent + " · epoch " + todo.lease.epoch + (todo.lease.live ? "" : " · lease expired") }));
  }
  if (todo.slice) {
    meta.append(el("div", { class: "elapsed", "data-started": todo.slice.started_at, "data-limit": String(todo.slice.limit_secs), text: "" }));
  }
  node.append(meta);
  if (todo.slice) {
    const tail = (s.tails || {})[todo.slice.id] || "";
    node.append(el("pre", { class: "tail", text: tail || "(no output yet)" }));
  }
  for (const e of todo.evidence || []) {
    node.append(el("div", { class: "meta", text: e.kind + ": " + e.summary }));
    if (e.stale_reason) node.append(el("div", { class: "meta stale", text: "stale: " + e.stale_reason }));
  }
  if (todo.handoff) {
    node.append(el("div", { class: "meta", text: "done: " + todo.handoff.done }));
    if (todo.handoff.next) node.append(el("div", { class: "meta", text: "next: " + todo.handoff.next }));
  }
  if (column === "open" || column === "monitors" || column === "claimed" || column === "blocked") {
    node.append(el("button", {
      class: "danger",
      onclick: () => {
        if (confirm("Drop " + todo.id + "? It will not be done.")) act("/api/todo/drop", { todo: todo.id, epoch: todo.epoch });
      },
    }, "Drop"));
  }
  return node;
}

function renderColumns(s) {
  for (const name of ["open", "monitors", "claimed", "blocked", "done", "dropped"]) {
    const column = s.columns[name];
    const box = document.querySelector("#col-" + name + " .cards");
    box.replaceChildren();
    for (const todo of column.cards) box.append(card(todo, name, s));
    if (column.count > column.cards.length) {
      box.append(el("div", { class: "more", text: "… and " + (column.count - column.cards.length) + " more (loopx todo list)" }));
    }
  }
}

function renderEvents(s) {
  const list = document.getElementById("events");
  list.replaceChildren();
  for (const e of s.events) {
    list.append(el("li", {}, String(e.seq).padStart(5) + "  " + relative(e.at).padEnd(9) + " ",
      el("span", { class: "actor", text: e.actor }), "  " + e.text));
  }
}

// Relative times and elapsed slices, from the last state: a local clock, not a request.
function tick() {
  for (const node of document.querySelectorAll("[data-at]")) {
    const at = node.getAttribute("data-at");
    if (!at) continue;
    const prefix = ["until ", ", resets ", "next poll "].find((p) => node.textContent.startsWith(p)) || "";
    node.textContent = prefix + relative(at);
  }
  for (const node of document.querySelectorAll(".elapsed")) {
    const started = ms(node.getAttribute("data-started"));
    const limit = Number(node.getAttribute("data-limit"));
    const elapsed = (Date.now() + skew - started) / 1000;
    node.textContent = "running " + short(elapsed) + (limit ? " of " + short(limit) : "");
    node.classList.toggle("over", limit > 0 && elapsed > limit);
  }
}

function render(s) {
  state = s;
  skew = ms(s.now) - Date.now();
  renderHeader(s);
  renderGates(s);
  renderAgents(s);
  renderQuota(s);
  renderColumns(s);
  renderEvents(s);
  renderHistoryGoals(s);
  tick();
}

// One button per goal, newest first; redrawn only when the goals change.
function renderHistoryGoals(s) {
  const list = document.getElementById("history-goals");
  const goals = s.history || [];
  const key = (all ? project : "") + JSON.stringify(goals);
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  list.replaceChildren(...goals.map((g) => el("li", {},
    el("button", { "data-goal": g.id, onclick: () => showHistory(g.id) }, g.id + " · " + g.objective + " (" + g.status + ")"))));
  if (!goals.length) list.append(el("li", { class: "nothing", text: "No goal yet." }));
}

// The page `loopx goal history --html` writes, fetched with the session and shown in a
// sandboxed frame without scripts (its page has none; the frame allows none, and the board's
// policy, which it inherits, none inline).
async function showHistory(goal) {
  let path = "/api/history/" + encodeURIComponent(goal);
  if (all) path = "/api/projects/" + encodeURIComponent(project || "") + "/history/" + encodeURIComponent(goal);
  const response = await fetch(path, { headers: { "X-Loopx-Session": session || "" } }).catch(() => null);
  if (!response || !response.ok) {
    const answer = response ? await response.json().catch(() => ({})) : {};
    showProblem(answer.error || ("the history cannot be read: " + (response ? "HTTP " + response.status : "the board is not reachable")));
    return;
  }
  const frame = document.getElementById("history-frame");
  frame.srcdoc = await response.text();
  frame.hidden = false;
  frame.scrollIntoView();
}

// `--all`: each registered project as its glance found it, and the chosen one's board below.
function renderAll(a) {
  all = a;
  const section = document.getElementById("projects");
  section.hidden = false;
  if (!a.projects.some((p) => p.id === project)) {
    const first = a.projects.find((p) => p.board) || a.projects[0];
    project = first ? first.id : null;
  }
  const list = document.getElementById("project-list");
  list.replaceChildren();
  let questions = 0;
  for (const p of a.projects) {
    const g = p.glance;
    let summary;
    if (g.state === "read") {
      questions += g.questions;
      summary = g.goals.length + (g.goals.length === 1 ? " active goal, " : " active goals, ") +
        g.questions + (g.questions === 1 ? " question open, " : " questions open, ") + g.running + " running" +
        (g.last_activity ? ", last activity " + relative(g.last_activity) : "") +
        (g.goals.length ? " · " + g.goals.map((goal) => goal.id + " " + goal.objective).join(" · ") : "");
    } else if (g.state === "gone") summary = "gone (moved or deleted; `loopx projects forget` removes it)";
    else if (g.state === "database") summary = "its store is a database (" + g.url + "): `loopx board` in the project opens it";
    else summary = "cannot be read now: " + g.why;
    list.append(el("li", { "data-project": p.id, class: (p.id === project ? "selected " : "") + g.state },
      el("button", { onclick: () => choose(p.id) }, el("strong", { text: g.root }), " " + summary)));
  }
  if (!a.projects.length) list.append(el("li", { class: "nothing", text: "No projects yet: `loopx init` in a project adds it here." }));
  const chosen = a.projects.find((p) => p.id === project);
  const note = document.getElementById("project-note");
  document.querySelector("main").hidden = !(chosen && chosen.board);
  note.hidden = !!(chosen && chosen.board);
  if (chosen && chosen.board) {
    render(chosen.board);
  } else {
    note.textContent = chosen
      ? (chosen.problem ? chosen.problem.error : "This project's board cannot be shown here.")
      : "";
  }
  if (chosen && chosen.problem) showProblem(chosen.problem.error);
  document.title = (questions ? "(" + questions + ") " : "") + "loopx board --all";
}

function choose(id) {
  project = id;
  sessionStorage.setItem("loopx-project", id);
  drawnGates = null;
  document.getElementById("problem").hidden = true;
  if (all) renderAll(all);
}

// The browser retries a dropped stream by itself, but not one the board refused (a restarted
// board has a new session): then the page says what to do.
function connect() {
  const live = document.getElementById("live");
  const source = new EventSource("/api/stream?session=" + encodeURIComponent(session || ""));
  source.addEventListener("open", () => { live.textContent = "● live"; live.classList.add("on"); });
  source.addEventListener("error", async () => {
    live.classList.remove("on");
    if (source.readyState !== EventSource.CLOSED) {
      live.textContent = "○ reconnecting";
      return;
    }
    const status = await fetch("/api/state", { headers: { "X-Loopx-Session": session || "" } })
      .then((r) => r.status).catch(() => 0);
    if (status === 401) {
      live.textContent = "○ offline";
      showProblem("This board's session ended (the board was restarted): open the address `loopx board` printed.");
      return;
    }
    live.textContent = "○ reconnecting";
    setTimeout(connect, 2000);
  });
  source.addEventListener("state", (e) => {
    const s = JSON.parse(e.data);
    if (Array.isArray(s.projects)) renderAll(s);
    else render(s);
  });
  source.addEventListener("problem", (e) => {
    const problem = document.getElementById("problem");
    problem.textContent = JSON.parse(e.data).error;
    problem.hidden = false;
  });
}

document.getElementById("add-todo").addEventListener("submit", async (e) => {
  e.preventDefault();
  const title = document.getElementById("add-title");
  const priority = Number(document.getElementById("add-priority").value) || 0;
  const body = { title: title.value, priority };
  // With several active goals the person says which; with one, the goal is the one.
  const goal = document.getElementById("add-goal");
  if (!goal.hidden && goal.value) body.goal = goal.value;
  if (await act("/api/todo/add", body)) title.value = "";
});

function showProblem(text) {
  const problem = document.getElementById("problem");
  problem.textContent = text;
  problem.hidden = false;
}

// A fresh address: trade its code for the session, then forget the code (it works once).
async function start() {
  const code = new URLSearchParams(location.hash.slice(1)).get("code");
  if (code) {
    history.replaceState(null, "", "/");
    const response = await fetch("/api/session", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Loopx-Board": "1" },
      body: JSON.stringify({ code }),
    }).catch(() => null);
    const answer = response ? await response.json().catch(() => ({})) : {};
    if (response && response.ok && answer.session) {
      session = answer.session;
      sessionStorage.setItem("loopx-session", session);
    } else if (!session) {
      showProblem(answer.error || "The board is not reachable.");
      return;
    }
  }
  if (!session) {
    showProblem("Open an address `loopx board` printed (press Enter in its terminal for a new one).");
    return;
  }
  connect();
}

setInterval(tick, 1000);
start();
