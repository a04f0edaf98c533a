import { freezeState, readRun, type WebBackend } from "./backend.js";
import { HttpError } from "./http-error.js";
import type { LiveFeed } from "./live-feed.js";
import type { RunIndex } from "./run-index.js";
import { runView } from "./run-view.js";
import { answersTree } from "./tree-answer.js";

/** What the inbox's approval form sends. */
export interface AnswerForm {
  decision?: unknown;
  note?: unknown;
}

/** What the webhook of earlier releases sends to `POST /runs/:id/approve`. */
export interface WebhookForm {
  decision?: unknown;
  approver?: unknown;
  requestId?: unknown;
  note?: unknown;
}

/**
 * What people do to runs from the pages and the webhook: answer an approval, resume, halt,
 * freeze and unfreeze the fleet. Mutations of one run are ordered (two tabs answering at once
 * see one winner); each tells the live feed.
 */
export class RunActions {
  readonly #backend: WebBackend;
  readonly #index: RunIndex;
  readonly #live: LiveFeed;
  readonly #now: () => number;
  readonly #locks = new Map<string, Promise<unknown>>();

  constructor(parts: { backend: WebBackend; index: RunIndex; live: LiveFeed; now: () => number }) {
    this.#backend = parts.backend;
    this.#index = parts.index;
    this.#live = parts.live;
    this.#now = parts.now;
  }

  /**
   * Answers one pending approval from the inbox: `approve`, or `deny` with a reason. A request
   * already answered, stale or not found is refused with the reason (409 or 404).
   */
  async answer(runId: string, requestId: string, form: AnswerForm, approver: string) {
    const decision = form.decision;
    if (decision !== "approve" && decision !== "deny")
      throw new HttpError(400, 'decision must be "approve" or "deny"');
    const note = typeof form.note === "string" ? form.note.trim().slice(0, 2_000) : "";
    if (decision === "deny" && note === "")
      throw new HttpError(
        400,
        "a denial needs a reason (note): it is recorded and shown to the agent",
      );
    return this.#exclusive(runId, async () => {
      await this.#answerable(runId, requestId);
      const result = await this.#backend.answer(runId, {
        decision,
        approver,
        requestId,
        ...(note ? { note } : {}),
      });
      this.#index.touch(runId);
      this.#live.notify();
      return { runId, requestId, decision, approver, status: result.status };
    });
  }

  /**
   * The webhook's answer: the approver is required; a decision that is neither `approve` nor
   * `deny` is recorded as indeterminate (which refuses the call). Waits for the run to go on.
   */
  async webhookAnswer(runId: string, form: WebhookForm) {
    if (typeof form.approver !== "string" || form.approver.trim() === "")
      throw new HttpError(400, "approver must name the person approving");
    const readable = form.decision === "approve" || form.decision === "deny";
    const result = await this.#exclusive(runId, () =>
      this.#backend.answer(
        runId,
        {
          decision: readable ? (form.decision as "approve" | "deny") : "indeterminate",
          approver: String(form.approver),
          ...(typeof form.requestId === "string" ? { requestId: form.requestId } : {}),
          ...(readable
            ? typeof form.note === "string"
              ? { note: form.note }
              : {}
            : { note: `unreadable decision: ${JSON.stringify(form.decision)?.slice(0, 200)}` }),
        },
        { wait: true },
      ),
    );
    this.#live.notify(runId);
    return { runId, status: result.status };
  }

  /** Resumes a run that is not finished. */
  async resume(runId: string) {
    const result = await this.#exclusive(runId, () => this.#backend.resume(runId));
    this.#live.notify(runId);
    return { runId, status: result.status };
  }

  /** Halts a run for good; the reason is required. */
  async halt(runId: string, reason: unknown, by: string) {
    const text = typeof reason === "string" ? reason.trim().slice(0, 500) : "";
    if (text === "") throw new HttpError(400, "halting needs a reason");
    const result = await this.#exclusive(runId, () => this.#backend.halt(runId, text, by));
    this.#live.notify(runId);
    return { runId, status: result.status };
  }

  /** Freezes the fleet (the kill switch); the reason is required, every refused call shows it. */
  async freeze(reason: unknown, by: string) {
    const text = typeof reason === "string" ? reason.trim().slice(0, 500) : "";
    if (text === "")
      throw new HttpError(400, "freezing needs a reason: every refused call shows it");
    await this.#backend.freezeStore.freeze({ reason: text, by });
    this.#live.notify();
    return { fleet: await freezeState(this.#backend.freezeStore) };
  }

  /** Lifts the fleet's freeze. */
  async unfreeze(by: string) {
    await this.#backend.freezeStore.unfreeze({ by });
    this.#live.notify();
    return { fleet: await freezeState(this.#backend.freezeStore) };
  }

  /** Refuses an answer to a request that is not pending now (under the run's lock). */
  async #answerable(runId: string, requestId: string): Promise<void> {
    const { events, error } = await readRun(this.#backend.store, runId);
    if (error) throw new HttpError(409, `the run's log cannot be read: ${error}`);
    if (events.length === 0) throw new HttpError(404, `run ${runId} not found`);
    const view = runView(runId, events, {
      now: this.#now(),
      ...(this.#backend.policyDigest ? { policyDigest: this.#backend.policyDigest } : {}),
    });
    const pending = view.pending.find((item) => item.requestId === requestId);
    if (!pending) {
      const answered = view.answered.find((item) => item.requestId === requestId);
      if (answered)
        throw new HttpError(
          409,
          `already answered: ${answered.decision} by ${answered.approver ?? "someone"} at ${new Date(answered.at).toISOString()}`,
        );
      throw new HttpError(404, `run ${runId} has no approval request ${requestId}`);
    }
    // Asked inside a delegated run: answerable here only when this server runs the tree's root.
    if (
      pending.state === "elsewhere" &&
      view.parent &&
      (await answersTree(this.#backend, view.parent.rootRunId))
    )
      return;
    if (pending.state !== "pending")
      throw new HttpError(409, `cannot be answered: ${pending.why ?? pending.state}`);
  }

  /** Runs one mutation of a run at a time, so two tabs answering at once are ordered. */
  async #exclusive<T>(runId: string, work: () => Promise<T>): Promise<T> {
    const before = this.#locks.get(runId) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(work);
    this.#locks.set(runId, mine);
    try {
      return await mine;
    } finally {
      if (this.#locks.get(runId) === mine) this.#locks.delete(runId);
    }
  }
}
