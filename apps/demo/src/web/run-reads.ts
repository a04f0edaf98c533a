import type { StoredEvent } from "@loopguard/core";
import { freezeState, pageOf, readRun, type WebBackend } from "./backend.js";
import { HttpError } from "./http-error.js";
import type { RunIndex } from "./run-index.js";
import { type ChainLink, type PendingApproval, type RunView, runView } from "./run-view.js";
import { answersTree } from "./tree-answer.js";

/** The inbox: every pending approval, oldest first, and the fleet's state. */
export interface InboxData {
  pending: PendingApproval[];
  fleet: unknown;
  /** How many parked runs were left out (more than 500 are parked). */
  truncated?: number;
}

/** The most parked runs the inbox reads. */
const inboxLimit = 500;

/**
 * What the pages and the API read: the inbox, one run, a page of the run list. Every value
 * shown goes through the backend's redactor. Parked runs' logs are cached by event count, so
 * a live page's refresh does not re-read every log.
 */
export class RunReads {
  readonly #backend: WebBackend;
  readonly #index: RunIndex;
  readonly #now: () => number;
  /** The logs of parked runs, by run id, with the event count they were read at. */
  readonly #parkedLogs = new Map<string, { events: number; log: StoredEvent[] }>();

  constructor(parts: { backend: WebBackend; index: RunIndex; now: () => number }) {
    this.#backend = parts.backend;
    this.#index = parts.index;
    this.#now = parts.now;
  }

  /** Every pending approval of the parked runs, oldest first, with the fleet's state. */
  async inbox(): Promise<InboxData> {
    await this.#index.refresh();
    const waiting = this.#index.filter({ status: "awaiting_approval" });
    const views = await Promise.all(
      waiting
        .slice(0, inboxLimit)
        .map(async (row) => this.#view(row.runId, await this.#parkedLog(row.runId, row.events))),
    );
    // Runs no longer parked leave the cache.
    const parked = new Set(waiting.map((row) => row.runId));
    for (const runId of this.#parkedLogs.keys())
      if (!parked.has(runId)) this.#parkedLogs.delete(runId);
    const pending: PendingApproval[] = [];
    const roots = new Map<string, Promise<boolean>>();
    for (const view of views) {
      await this.#answerHere(view, roots);
      pending.push(...view.pending);
    }
    await this.#addChains(views, pending);
    pending.sort((a, b) => a.askedAt - b.askedAt);
    return {
      pending,
      fleet: await freezeState(this.#backend.freezeStore),
      ...(waiting.length > inboxLimit ? { truncated: waiting.length - inboxLimit } : {}),
    };
  }

  /**
   * One run's view, or `undefined` when there is no such run. A corrupt log still shows what
   * the list knows of the run, with the error.
   */
  async run(runId: string) {
    const { events, error } = await readRun(this.#backend.store, runId);
    if (events.length === 0 && !error) return undefined;
    const view = this.#view(runId, events);
    await this.#answerHere(view);
    // A child still running shows its live state (parked on an approval, say), not just
    // "running" from its parent's log.
    if (view.children.length > 0) await this.#index.refresh();
    for (const child of view.children) {
      const row = this.#index.get(child.runId);
      if (!row) continue;
      child.status = row.status;
      child.costUsd = row.costUsd;
      child.steps = row.steps;
    }
    if (!error) return view;
    const row = this.#index.get(runId);
    if (!row) return { ...view, corrupt: error, status: "unreadable" };
    return {
      ...view,
      corrupt: error,
      status: row.status,
      ...(row.agentId ? { agentId: row.agentId } : {}),
      ...(row.task ? { task: String(this.#backend.redact(row.task)) } : {}),
      steps: row.steps,
      costUsd: row.costUsd,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    };
  }

  /** A page of the run list from `status`, `agent`, `limit` (1-500) and `cursor`. */
  async runs(query: (key: string) => string | undefined) {
    const limit = Number(query("limit") ?? "50");
    if (!Number.isInteger(limit) || limit < 1 || limit > 500)
      throw new HttpError(400, "limit must be an integer from 1 to 500");
    const status = query("status") ?? "";
    const agent = query("agent") ?? "";
    const cursor = query("cursor") ?? "";
    try {
      await this.#index.refresh();
      const page = pageOf(
        this.#index.filter({ ...(status ? { status } : {}), ...(agent ? { agentId: agent } : {}) }),
        { limit, ...(cursor ? { cursor } : {}) },
      );
      return {
        ...page,
        runs: page.runs.map((row) =>
          row.task ? { ...row, task: String(this.#backend.redact(row.task)) } : row,
        ),
      };
    } catch (error) {
      if (error instanceof RangeError) throw new HttpError(400, error.message);
      throw error;
    }
  }

  /**
   * Gives each approval asked inside a delegated run the chain of runs above it, from the
   * `child-run-wait` its root's log holds (the root is parked with it, so its log is cached).
   */
  async #addChains(views: RunView[], pending: PendingApproval[]): Promise<void> {
    const roots = new Set<string>();
    for (const view of views) if (view.parent) roots.add(view.parent.rootRunId);
    if (roots.size === 0) return;
    const chains = new Map<string, ChainLink[]>();
    for (const rootRunId of roots) {
      const row = this.#index.get(rootRunId);
      const log = row
        ? await this.#parkedLog(rootRunId, row.events)
        : (await readRun(this.#backend.store, rootRunId)).events;
      for (const event of log) {
        if (event.type !== "child-run-wait") continue;
        for (const request of event.approvals ?? [])
          chains.set(
            `${request.runId}\n${request.requestId}`,
            request.chain.map((link) => ({
              runId: link.runId,
              agentId: link.agentId,
              task: String(this.#backend.redact(link.task)),
              ...(link.tool ? { tool: link.tool } : {}),
            })),
          );
      }
    }
    for (const item of pending) {
      const chain = chains.get(`${item.runId}\n${item.requestId}`);
      if (chain && chain.length > 1) item.chain = chain;
    }
  }

  /**
   * Makes the approvals asked inside a delegated run answerable here when this server runs the
   * tree's root agent (see `answersTree`); otherwise they stay `elsewhere`, saying where to
   * answer. `roots` remembers the roots checked during one read.
   */
  async #answerHere(view: RunView, roots = new Map<string, Promise<boolean>>()): Promise<void> {
    if (!view.parent || !view.pending.some((item) => item.state === "elsewhere")) return;
    const rootRunId = view.parent.rootRunId;
    let here = roots.get(rootRunId);
    if (!here) {
      here = answersTree(this.#backend, rootRunId);
      roots.set(rootRunId, here);
    }
    if (!(await here)) return;
    for (const item of view.pending) {
      if (item.state !== "elsewhere") continue;
      item.state = "pending";
      delete item.why;
    }
  }

  /** A parked run's log: read again only when its summary says it grew. */
  async #parkedLog(runId: string, events: number): Promise<StoredEvent[]> {
    let cached = this.#parkedLogs.get(runId);
    if (!cached || cached.events !== events) {
      cached = { events, log: (await readRun(this.#backend.store, runId)).events };
      this.#parkedLogs.set(runId, cached);
    }
    return cached.log;
  }

  #view(runId: string, events: StoredEvent[]): RunView {
    const backend = this.#backend;
    return runView(runId, events, {
      now: this.#now(),
      ...(backend.policyDigest ? { policyDigest: backend.policyDigest } : {}),
      redact: (value) => backend.redact(value),
    });
  }
}
