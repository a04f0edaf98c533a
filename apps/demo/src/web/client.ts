/**
 * The web inbox's page script, run in the browser (served as a module from this file's build
 * output; it imports nothing). It renders the view the server embedded in `#boot` at once (so
 * the first paint needs no round trip), then keeps it live from `/api/live` (server-sent
 * events). Every string from a run is written with `textContent`, never as markup.
 */

import type { FreezeStatus, RunSummary } from "@loopguard/core";
import type { PageBoot } from "./page.js";
import type { PendingApproval, RunView } from "./run-view.js";

type Boot = PageBoot;

// The shapes the server sends are the server's own types (type-only imports: nothing of them
// reaches the browser).
type Pending = PendingApproval;
type Freeze = FreezeStatus & { error?: string };
type RunRow = RunSummary;
type RunViewData = RunView & { corrupt?: string };

const boot = JSON.parse(document.getElementById("boot")?.textContent ?? "{}") as Boot;
const main = document.getElementById("main") as HTMLElement;
const live = document.getElementById("live") as HTMLElement;
let current: unknown = boot.data;

type Child = Node | string | null | undefined | false;

/** Creates an element; strings become text nodes (never markup). */
function h(
  tag: string,
  props: Record<string, string | boolean | EventListener> = {},
  ...children: Child[]
): HTMLElement {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (typeof value === "function") element.addEventListener(key.slice(2), value);
    else if (value === true) element.setAttribute(key, "");
    else if (value !== false) element.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return element;
}

/** Replaces the page's content, skipping empty slots. */
function put(...children: Child[]): void {
  main.replaceChildren(
    ...children.filter(
      (child): child is Node | string => child !== null && child !== undefined && child !== false,
    ),
  );
}

/** Keeps the Inbox link's count of waiting approvals current. */
function setCount(waiting: number): void {
  const link = document.querySelector<HTMLAnchorElement>('header nav a[href="/"]');
  if (!link) return;
  let badge = link.querySelector<HTMLElement>(".count");
  if (waiting === 0) {
    badge?.remove();
    return;
  }
  if (!badge) {
    badge = h("span", { class: "count" });
    link.append(" ", badge);
  }
  badge.textContent = String(waiting);
  badge.setAttribute("aria-label", `${waiting} waiting`);
}

function ago(ms: number): string {
  const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} d ago`;
}

function left(ms: number): string {
  const minutes = Math.ceil((ms - Date.now()) / 60_000);
  if (minutes <= 0) return "expired";
  if (minutes < 60) return `${minutes} min left`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min left`;
}

const money = (usd: number) => `$${usd < 0.01 && usd > 0 ? usd.toFixed(4) : usd.toFixed(2)}`;
const short = (digest: string) => (digest.length > 22 ? `${digest.slice(0, 22)}…` : digest);

async function api(
  path: string,
  body?: unknown,
): Promise<{ ok: boolean; status: number; data: Record<string, unknown> }> {
  const response = await fetch(path, {
    method: body === undefined ? "GET" : "POST",
    headers:
      body === undefined ? {} : { "content-type": "application/json", "x-csrf-token": boot.csrf },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    credentials: "same-origin",
  });
  let data: Record<string, unknown> = {};
  try {
    data = (await response.json()) as Record<string, unknown>;
  } catch {
    data = { error: `the server answered ${response.status} without JSON` };
  }
  return { ok: response.ok, status: response.status, data };
}

function say(text: string): void {
  live.textContent = text;
}

function statusBadge(status: string): HTMLElement {
  return h(
    "span",
    { class: `badge s-${status.replace(/[^a-z_]/g, "")}` },
    status.replace(/_/g, " "),
  );
}

function argsList(args: unknown): HTMLElement {
  if (args === null || typeof args !== "object" || Array.isArray(args))
    return h("pre", { class: "args" }, JSON.stringify(args, null, 2));
  const list = h("dl", { class: "args" });
  for (const [key, value] of Object.entries(args as Record<string, unknown>)) {
    list.append(
      h("dt", {}, key),
      h("dd", {}, typeof value === "string" ? value : JSON.stringify(value)),
    );
  }
  return list;
}

function approvalCard(item: Pending, headingLevel: "h2" | "h3"): HTMLElement {
  const id = `${item.runId}-${item.requestId}`.replace(/[^A-Za-z0-9_-]/g, "_");
  const result = h("p", { class: "result", role: "status", "aria-live": "polite" });
  const note = h("textarea", {
    id: `note-${id}`,
    name: "note",
    rows: "2",
    placeholder: "Why (recorded in the run's log)",
  }) as HTMLTextAreaElement;
  const answer = async (decision: "approve" | "deny", button: HTMLButtonElement) => {
    if (decision === "deny" && note.value.trim() === "") {
      result.textContent =
        "Say why you deny it: the reason goes to the run's log and to the agent.";
      note.focus();
      return;
    }
    for (const other of card.querySelectorAll("button"))
      (other as HTMLButtonElement).disabled = true;
    button.textContent = decision === "approve" ? "Approving…" : "Denying…";
    const reply = await api(
      `/api/runs/${encodeURIComponent(item.runId)}/approvals/${encodeURIComponent(item.requestId)}`,
      {
        decision,
        note: note.value.trim(),
      },
    );
    if (reply.ok) {
      card.classList.add("done");
      result.textContent = `${decision === "approve" ? "Approved" : "Denied"} by ${boot.user}. The run is now ${String(reply.data.status).replace(/_/g, " ")}.`;
      say(result.textContent);
    } else {
      result.textContent = String(reply.data.error ?? `failed (${reply.status})`);
      card.classList.add("lost");
      say(result.textContent);
    }
  };
  const approveButton = h(
    "button",
    { type: "button", class: "approve" },
    "Approve",
  ) as HTMLButtonElement;
  const denyButton = h("button", { type: "button", class: "deny" }, "Deny") as HTMLButtonElement;
  approveButton.addEventListener("click", () => void answer("approve", approveButton));
  denyButton.addEventListener("click", () => void answer("deny", denyButton));
  const answerable = item.state === "pending";
  const card = h(
    "article",
    {
      class: `card approval ${item.state}`,
      "aria-labelledby": `title-${id}`,
      "data-run": item.runId,
    },
    h(
      headingLevel,
      { id: `title-${id}` },
      h("code", {}, item.tool),
      " ",
      h("span", { class: "muted" }, "in "),
      h("a", { href: `/runs/${encodeURIComponent(item.runId)}` }, item.runId),
    ),
    item.task ? h("p", { class: "task" }, item.task) : null,
    item.chain ? delegationChain(item.chain) : null,
    h("h4", {}, item.reasons.length > 1 ? `${item.reasons.length} reasons to ask` : "Why it asks"),
    h(
      "ul",
      { class: "reasons" },
      ...item.reasons.map((reason) =>
        h(
          "li",
          {},
          h("code", {}, reason.reason),
          reason.gate ? h("span", { class: "muted" }, ` (asked by ${reason.gate})`) : null,
          " ",
          reason.message,
        ),
      ),
    ),
    h("h4", {}, "Arguments"),
    argsList(item.args),
    h(
      "p",
      { class: "meta" },
      `asked ${ago(item.askedAt)} · `,
      h("span", { class: "expires", "data-expires": String(item.expiresAt) }, left(item.expiresAt)),
      " · bound to arguments ",
      h("code", { title: item.argsDigest }, short(item.argsDigest)),
      " and policy ",
      h("code", { title: item.policyDigest }, short(item.policyDigest)),
      item.agentId ? ` · agent ${item.agentId}` : "",
    ),
    answerable
      ? h(
          "div",
          { class: "answer" },
          h("label", { for: `note-${id}` }, "Reason"),
          note,
          h("div", { class: "buttons" }, approveButton, denyButton),
        )
      : h(
          "p",
          { class: "why-not" },
          h(
            "strong",
            {},
            item.state === "stale"
              ? "Stale: "
              : item.state === "elsewhere"
                ? "Delegated: "
                : "Expired: ",
          ),
          item.why ?? "",
        ),
    result,
  );
  return card;
}

/** The runs above a delegated approval, root first: each run's agent and task, and the call down. */
function delegationChain(chain: NonNullable<Pending["chain"]>): HTMLElement {
  return h(
    "div",
    { class: "chain" },
    h("h4", {}, "Asked inside a delegated run"),
    h(
      "ol",
      { class: "chain-runs" },
      ...chain.map((link) =>
        h(
          "li",
          { "data-run": link.runId },
          h("a", { href: `/runs/${encodeURIComponent(link.runId)}` }, link.agentId),
          `: ${link.task}`,
          link.tool ? h("span", { class: "muted" }, ` → called `, h("code", {}, link.tool)) : null,
        ),
      ),
    ),
  );
}

function renderInbox(data: { pending: Pending[]; fleet: Freeze }): void {
  put(
    h("h1", {}, "Approvals waiting"),
    data.fleet.frozen
      ? h(
          "p",
          { class: "banner" },
          `The fleet is frozen${data.fleet.by ? ` by ${data.fleet.by}` : ""}: ${data.fleet.reason ?? data.fleet.error ?? ""}`,
        )
      : null,
    data.pending.length === 0
      ? h(
          "p",
          { class: "empty" },
          "Nothing is waiting on you. New requests appear here as runs ask.",
        )
      : h("p", { class: "muted" }, `${data.pending.length} waiting, oldest first.`),
    h("div", { class: "cards" }, ...data.pending.map((item) => approvalCard(item, "h2"))),
  );
  const waiting = data.pending.filter(
    (item) => item.state === "pending" || item.state === "elsewhere",
  ).length;
  document.title = `(${waiting}) Inbox · loopguard`;
  setCount(waiting);
}

function renderRuns(
  data: { runs: RunRow[]; next?: string; total: number },
  query: Record<string, string>,
): void {
  const form = h(
    "form",
    { class: "filters", method: "get", action: "/runs" },
    h("label", { for: "f-status" }, "Status"),
    h(
      "select",
      { id: "f-status", name: "status" },
      ...[
        "",
        "running",
        "awaiting_approval",
        "awaiting_child",
        "completed",
        "stopped",
        "halted",
        "failed",
      ].map((status) =>
        h(
          "option",
          { value: status, ...(query.status === status ? { selected: true } : {}) },
          status === "" ? "any" : status.replace(/_/g, " "),
        ),
      ),
    ),
    h("label", { for: "f-agent" }, "Agent"),
    h("input", { id: "f-agent", name: "agent", value: query.agent ?? "", placeholder: "any" }),
    h("button", { type: "submit" }, "Filter"),
  );
  const table = h(
    "table",
    {},
    h("caption", {}, `${data.total} run${data.total === 1 ? "" : "s"}`),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["Status", "Run", "Agent", "Task", "Cost", "Steps", "Updated"].map((name) =>
          h("th", { scope: "col" }, name),
        ),
      ),
    ),
    h(
      "tbody",
      {},
      ...data.runs.map((row) =>
        h(
          "tr",
          {},
          h("td", {}, statusBadge(row.status)),
          h(
            "td",
            {},
            h("a", { href: `/runs/${encodeURIComponent(row.runId)}` }, row.runId),
            row.parentRunId
              ? h(
                  "span",
                  { class: "muted child-of" },
                  " ↳ delegated by ",
                  h("a", { href: `/runs/${encodeURIComponent(row.parentRunId)}` }, row.parentRunId),
                )
              : null,
          ),
          h("td", {}, row.agentId ?? ""),
          h("td", { class: "task" }, row.error ? `log unreadable: ${row.error}` : (row.task ?? "")),
          h("td", { class: "num" }, money(row.costUsd)),
          h("td", { class: "num" }, String(row.steps)),
          h("td", {}, ago(row.updatedAt)),
        ),
      ),
    ),
  );
  const params = new URLSearchParams(query);
  if (data.next) params.set("cursor", data.next);
  put(
    h("h1", {}, "Runs"),
    form,
    h("div", { class: "table-wrap" }, table),
    data.next
      ? h("p", {}, h("a", { href: `/runs?${params.toString()}`, rel: "next" }, "Next page →"))
      : null,
  );
  document.title = "Runs · loopguard";
}

function renderRun(data: RunViewData): void {
  const actions = h("div", { class: "buttons" });
  const result = h("p", { class: "result", role: "status", "aria-live": "polite" });
  const finished = ["completed", "stopped", "halted", "failed"].includes(data.status);
  if (!finished && data.pending.length === 0) {
    const resume = h("button", { type: "button" }, "Resume") as HTMLButtonElement;
    resume.addEventListener("click", async () => {
      resume.disabled = true;
      const reply = await api(`/api/runs/${encodeURIComponent(data.runId)}/resume`, {});
      result.textContent = reply.ok
        ? `Resumed: the run is now ${String(reply.data.status)}.`
        : String(reply.data.error);
      say(result.textContent ?? "");
    });
    actions.append(resume);
  }
  if (!finished) {
    const reason = h("input", {
      id: "halt-reason",
      name: "reason",
      placeholder: "why halt it",
    }) as HTMLInputElement;
    const halt = h("button", { type: "button", class: "deny" }, "Halt run") as HTMLButtonElement;
    halt.addEventListener("click", async () => {
      if (reason.value.trim() === "") {
        result.textContent = "Say why you halt it.";
        reason.focus();
        return;
      }
      if (!window.confirm(`Halt ${data.runId} for good? A halted run stays halted.`)) return;
      halt.disabled = true;
      const reply = await api(`/api/runs/${encodeURIComponent(data.runId)}/halt`, {
        reason: reason.value.trim(),
      });
      result.textContent = reply.ok
        ? `Halted: the run is now ${String(reply.data.status)}.`
        : String(reply.data.error);
      say(result.textContent ?? "");
    });
    actions.append(h("label", { for: "halt-reason" }, "Halt reason"), reason, halt);
  }
  put(
    h("p", {}, h("a", { href: "/runs" }, "← Runs")),
    h("h1", {}, "Run ", h("code", {}, data.runId)),
    data.corrupt
      ? h("p", { class: "banner", role: "alert" }, `This run's log cannot be read: ${data.corrupt}`)
      : null,
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "Status"),
      h("dd", {}, statusBadge(data.status), data.why ? ` (${data.why})` : ""),
      data.haltReason ? h("dt", {}, "Halted because") : null,
      data.haltReason ? h("dd", {}, data.haltReason) : null,
      data.parent ? h("dt", {}, "Started by") : null,
      data.parent
        ? h(
            "dd",
            { class: "parent-run" },
            h("a", { href: `/runs/${encodeURIComponent(data.parent.runId)}` }, data.parent.runId),
            ` through its call to ${data.parent.tool} (depth ${data.parent.depth})`,
          )
        : null,
      h("dt", {}, "Agent"),
      h("dd", {}, data.agentId ?? "unknown"),
      h("dt", {}, "Task"),
      h("dd", {}, data.task ?? ""),
      data.answer ? h("dt", {}, "Answer") : null,
      data.answer ? h("dd", {}, data.answer) : null,
      h("dt", {}, "Cost"),
      h(
        "dd",
        {},
        `${money(data.costUsd)} over ${data.steps} step${data.steps === 1 ? "" : "s"}, ${data.events} events`,
        data.delegatedCostUsd > 0
          ? ` (${money(data.delegatedCostUsd)} of it spent by the runs it delegated to)`
          : "",
      ),
      h("dt", {}, "Updated"),
      h("dd", {}, ago(data.updatedAt)),
    ),
    actions.childElementCount > 0 ? actions : null,
    result,
    data.pending.length > 0 ? h("h2", {}, "Waiting on a person") : null,
    ...data.pending.map((item) => approvalCard(item, "h3")),
    data.answered.length > 0 ? h("h2", {}, "Approvals answered") : null,
    data.answered.length > 0
      ? h(
          "ul",
          { class: "answered" },
          ...data.answered.map((item) =>
            h(
              "li",
              {},
              h("code", {}, item.tool),
              ` ${item.decision} by ${item.approver ?? "unknown"} ${ago(item.at)}`,
              item.note ? `: “${item.note}”` : "",
            ),
          ),
        )
      : null,
    data.children.length > 0 ? h("h2", {}, "Runs it delegated to") : null,
    data.children.length > 0 ? childRuns(data.children) : null,
    data.refusals.length > 0 ? h("h2", {}, "Refused calls") : null,
    data.refusals.length > 0
      ? h(
          "ul",
          { class: "refusals" },
          ...data.refusals.map((item) =>
            h(
              "li",
              {},
              h("code", {}, item.tool),
              " ",
              h("code", {}, `${item.refusedAt ?? ""} ${item.reason}`.trim()),
              item.message ? ` ${item.message}` : "",
            ),
          ),
        )
      : null,
    h("h2", {}, "Trace"),
    data.corrupt
      ? h("p", {}, "No trace: the log is unreadable.")
      : h("iframe", {
          class: "trace",
          title: `Trace of ${data.runId}`,
          src: `/runs/${encodeURIComponent(data.runId)}/trace.html`,
        }),
  );
  document.title = `${data.runId} · loopguard`;
}

/** The runs a run delegated to: each links to its own page. */
function childRuns(children: RunViewData["children"]): HTMLElement {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "child-runs" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ...["Run", "Tool", "Agent", "Status", "Cost"].map((title) =>
            h("th", { scope: "col" }, title),
          ),
        ),
      ),
      h(
        "tbody",
        {},
        ...children.map((child) =>
          h(
            "tr",
            { "data-run": child.runId },
            h(
              "td",
              {},
              h(
                "a",
                { href: `/runs/${encodeURIComponent(child.runId)}` },
                h("code", {}, child.runId),
              ),
            ),
            h("td", {}, h("code", {}, child.tool)),
            h("td", {}, child.agentId ?? ""),
            h("td", {}, statusBadge(child.status), child.error ? ` ${child.error}` : ""),
            h("td", {}, child.costUsd === undefined ? "" : money(child.costUsd)),
          ),
        ),
      ),
    ),
  );
}

function renderFleet(data: { fleet: Freeze }): void {
  const fleet = data.fleet;
  const result = h("p", { class: "result", role: "status", "aria-live": "polite" });
  const reason = h("input", {
    id: "freeze-reason",
    name: "reason",
    required: true,
    placeholder: "e.g. refunds misbehaving, investigating",
  }) as HTMLInputElement;
  const confirmBox = h("input", { id: "freeze-confirm", type: "checkbox" }) as HTMLInputElement;
  const button = h(
    "button",
    { type: "button", class: fleet.frozen ? "approve" : "deny" },
    fleet.frozen ? "Unfreeze the fleet" : "Freeze the fleet",
  ) as HTMLButtonElement;
  button.addEventListener("click", async () => {
    if (!confirmBox.checked) {
      result.textContent = "Tick the confirmation first.";
      confirmBox.focus();
      return;
    }
    if (!fleet.frozen && reason.value.trim() === "") {
      result.textContent = "Say why: every refused call shows this reason.";
      reason.focus();
      return;
    }
    button.disabled = true;
    const reply = await api(
      fleet.frozen ? "/api/fleet/unfreeze" : "/api/fleet/freeze",
      fleet.frozen ? {} : { reason: reason.value.trim() },
    );
    if (reply.ok) {
      current = { fleet: reply.data.fleet as Freeze };
      renderFleet(current as { fleet: Freeze });
      say(fleet.frozen ? "The fleet is running again." : "The fleet is frozen.");
    } else {
      result.textContent = String(reply.data.error);
      button.disabled = false;
    }
  });
  put(
    h("h1", {}, "Fleet"),
    h(
      "p",
      { class: fleet.frozen ? "banner" : "ok" },
      fleet.frozen
        ? `Frozen${fleet.by ? ` by ${fleet.by}` : ""}${fleet.at ? ` ${ago(fleet.at)}` : ""}: ${fleet.reason ?? fleet.error ?? ""}`
        : `Running${fleet.by ? ` (last unfrozen by ${fleet.by}${fleet.at ? ` ${ago(fleet.at)}` : ""})` : ""}. Every tool call of every run passes the kill switch first.`,
    ),
    fleet.frozen ? null : h("label", { for: "freeze-reason" }, "Reason"),
    fleet.frozen ? null : reason,
    h(
      "p",
      {},
      confirmBox,
      " ",
      h(
        "label",
        { for: "freeze-confirm" },
        fleet.frozen
          ? "Yes, let runs call tools again"
          : "Yes, refuse every tool call of every run until someone unfreezes",
      ),
    ),
    button,
    result,
  );
  document.title = "Fleet · loopguard";
}

function render(): void {
  const query = boot.query ?? {};
  switch (boot.view) {
    case "inbox":
      renderInbox(current as { pending: Pending[]; fleet: Freeze });
      return;
    case "runs":
      renderRuns(current as { runs: RunRow[]; next?: string; total: number }, query);
      return;
    case "run":
      renderRun(current as RunViewData);
      return;
    case "fleet":
      renderFleet(current as { fleet: Freeze });
      return;
    default:
      return;
  }
}

/** Re-reads the current view's data after a change the server announced. */
async function refresh(): Promise<void> {
  // A half-written reason or an answer in flight must not be wiped by a refresh.
  // It is put off (and tried again shortly), never dropped.
  const active = document.activeElement;
  const typing =
    active &&
    (active.tagName === "TEXTAREA" || active.tagName === "INPUT") &&
    (active as HTMLInputElement).value !== "";
  if (typing || main.querySelector("button:disabled")) {
    clearTimeout(timer);
    timer = setTimeout(() => void refresh(), 2_000);
    return;
  }
  const path =
    boot.view === "inbox"
      ? "/api/inbox"
      : boot.view === "runs"
        ? `/api/runs?${new URLSearchParams(boot.query ?? {}).toString()}`
        : boot.view === "run"
          ? `/api/runs/${encodeURIComponent((current as RunViewData).runId)}`
          : boot.view === "fleet"
            ? "/api/fleet"
            : undefined;
  if (!path) return;
  const reply = await api(path);
  if (reply.ok) {
    current = reply.data;
    render();
  }
}

let timer: ReturnType<typeof setTimeout> | undefined;
function connect(): void {
  const source = new EventSource(`/api/live?since=${encodeURIComponent(boot.version ?? "")}`);
  source.addEventListener("change", () => {
    clearTimeout(timer);
    timer = setTimeout(() => void refresh(), 150);
  });
  source.addEventListener("error", () => {
    document.body.classList.add("offline");
  });
  source.addEventListener("open", () => document.body.classList.remove("offline"));
}

render();
connect();
setInterval(() => {
  for (const element of document.querySelectorAll<HTMLElement>(".expires"))
    element.textContent = left(Number(element.dataset.expires));
}, 30_000);
