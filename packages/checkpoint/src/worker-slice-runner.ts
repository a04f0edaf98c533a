import { InvalidArgumentError, type RunOptions, type RunResult } from "@loopguard/core";
import { inTransaction, type PgPool } from "./postgres-pool.js";
import type { PostgresEventStore, TenantSlotRequest } from "./postgres-store-types.js";
import { queueChildRunner } from "./worker-child-runner.js";
import {
  jobSettings,
  type QueueClient,
  type QueueJob,
  queueDb,
  queueWaitOf,
  type ResolvedQueueOptions,
  type RunJobData,
} from "./worker-queue.js";
import { deferJob, type TenantSlots } from "./worker-tenant-slots.js";
import { isFenced, type TrackedStore, trackStore } from "./worker-tracked-store.js";
import type { AgentFactory, SliceReport } from "./worker-types.js";

/** What a `WorkerSliceRunner` needs from the worker that composes it (known once the queue is open). */
export interface WorkerSliceRunnerSettings {
  workerId: string;
  /** The public entry for error messages (`createWorker`). */
  where: string;
  store: PostgresEventStore;
  pool: PgPool;
  boss: QueueClient;
  queue: ResolvedQueueOptions;
  /** Per-tenant caps, when `tenantConcurrency` is set. */
  slots: TenantSlots | undefined;
  sliceMs: number;
  agent: AgentFactory;
  /** Reports an error (never throws). */
  reportError: (error: unknown, at: string) => void;
  /** Reports a slice (never throws). */
  report: (slice: SliceReport) => void;
}

type Action = "complete" | "continue" | "fail";

/** One slice in flight: its job, run, claim and the report it ends with. */
interface Slice {
  job: QueueJob;
  data: RunJobData;
  runId: string;
  epoch: number;
  /** How long the run waited in the queue for this slice (the database's clock). */
  queueWaitMs: number | undefined;
  /** The parent run, when this run is a child of an `asTool` call (from its run-start). */
  parentRunId?: string;
  /** The tenant slot this slice asks for with its claim (`tenantConcurrency`). */
  slot?: TenantSlotRequest;
  /** Whether the slot was granted, and whether the slice's closing transaction gave it back. */
  slotHeld: boolean;
  slotReleased: boolean;
  finish: (outcome: SliceReport["outcome"], extra?: Partial<SliceReport>) => void;
}

/**
 * The slice concern of a worker: one job advances its run for `sliceMs` under a fresh claim
 * (through an agent bound to the claim's epoch), then ends its job in a transaction that first
 * checks the claim still stands: re-queued, parked, completed, failed for pg-boss to retry, or
 * left alone when another worker claimed the run. `run` never rejects: every outcome, errors
 * included, reaches `report` (and errors `reportError`).
 */
export class WorkerSliceRunner {
  readonly #settings: WorkerSliceRunnerSettings;

  constructor(settings: WorkerSliceRunnerSettings) {
    this.#settings = settings;
  }

  /** Runs one slice of the job's run; never rejects. */
  async run(job: QueueJob): Promise<void> {
    const { boss, queue, slots, workerId, reportError, report } = this.#settings;
    const startedAt = Date.now();
    const data = readJobData(job.data);
    if (!data) {
      reportError(
        new InvalidArgumentError(
          `[checkpoint] job ${job.id} of queue ${queue.queue} has no runId; it was not sent by submitRun`,
        ),
        "job",
      );
      await boss
        .fail(queue.queue, job.id, { error: "no runId" })
        .catch((error: unknown) => reportError(error, "queue"));
      return;
    }
    const { runId } = data;
    const queueWaitMs = queueWaitOf(job, data);
    const tenant = slots && typeof data.tenant === "string" ? data.tenant : undefined;
    const slice: Slice = {
      job,
      data,
      runId,
      epoch: 0,
      queueWaitMs,
      ...(tenant !== undefined ? { slot: slots!.request(tenant, runId, workerId) } : {}),
      slotHeld: false,
      slotReleased: false,
      finish: (outcome, extra = {}) => {
        // Given back here only when the closing transaction did not (it failed or never ran).
        if (slice.slotHeld && !slice.slotReleased)
          slots!
            .release(tenant!, runId, workerId)
            .catch((error: unknown) => reportError(error, `tenant slot of run ${runId}`));
        report({
          workerId,
          runId,
          jobId: job.id,
          epoch: slice.epoch,
          outcome,
          startedAt,
          durationMs: Date.now() - startedAt,
          ...(queueWaitMs !== undefined ? { queueWaitMs } : {}),
          ...extra,
        });
      },
    };
    const advanced = await this.#advance(slice);
    if (advanced.skipped) return;
    try {
      await this.#conclude(slice, advanced);
    } catch (error) {
      reportError(error, `settling job ${job.id} of run ${runId}`);
      slice.finish("failed", { error: error instanceof Error ? error.message : String(error) });
    }
  }

  /** Claims the run and advances it for `sliceMs`; what the agent returned or threw. */
  async #advance(slice: Slice): Promise<{
    view: TrackedStore | undefined;
    result: RunResult | undefined;
    thrown: unknown;
    skipped?: true;
  }> {
    const { store, sliceMs, workerId, where } = this.#settings;
    const { job, data, runId } = slice;
    let view: TrackedStore | undefined;
    const pause = new AbortController();
    const timer = setTimeout(() => pause.abort(), sliceMs);
    let result: RunResult | undefined;
    let thrown: unknown;
    try {
      await this.#holdToLease(job);
      // One round trip claims the run and reads its log (and takes the tenant's slot first,
      // when capped: refused, nothing is claimed); the agent's own read of the log (on resume)
      // is served from it.
      const claimed = slice.slot
        ? await store.claimAndReadWithSlot(runId, slice.slot)
        : await store.claimAndRead(runId);
      if (slice.slot && claimed.epoch === 0) {
        // The tenant is at its cap: the run waits in the queue, this worker takes other jobs.
        // (A failure here leaves the job active: it is retried when its lease expires.)
        const { boss, pool, queue } = this.#settings;
        await deferJob(boss, pool, queue, job, data, 4);
        slice.finish("deferred");
        return { view, result, thrown, skipped: true };
      }
      // Its next wait at the cap starts again from a short backoff.
      if (slice.slot) {
        slice.slotHeld = true;
        delete data.deferrals;
      }
      slice.epoch = claimed.epoch;
      const events = claimed.events;
      const start = events[0];
      if (start?.type === "run-start" && start.parent) slice.parentRunId = start.parent.runId;
      const tracked = trackStore(store.fenced(runId, slice.epoch), events);
      view = tracked;
      const { boss, pool, queue } = this.#settings;
      const childRunner = queueChildRunner({
        boss,
        pool,
        queue,
        data,
        permit: (childRunId) => tracked.permitChild(childRunId),
      });
      const agent = await this.#settings.agent(view, {
        runId,
        epoch: slice.epoch,
        workerId,
        childRunner,
      });
      if (!agent || typeof agent.resume !== "function")
        throw new InvalidArgumentError(
          `[checkpoint] ${where}: the agent factory must return an agent made with createAgent`,
        );
      if (events.length === 0) {
        if (data.task === undefined) {
          await this.#settle(slice, "complete", { outcome: "skipped" });
          slice.finish("skipped", { error: `run ${runId} has no log and its job carries no task` });
          return { view, result, thrown, skipped: true };
        }
        // The wait in the worker's queue, for the run-start (core does not read it yet: the
        // worker reports it on SliceReport.queueWaitMs).
        const runOptions: RunOptions & { queueWaitMs?: number } = {
          runId,
          pauseSignal: pause.signal,
          ...(data.context ? { context: data.context } : {}),
          ...(slice.queueWaitMs ? { queueWaitMs: slice.queueWaitMs } : {}),
        };
        result = await agent.run(data.task, runOptions);
      } else {
        result = await agent.resume(runId, { pauseSignal: pause.signal });
      }
    } catch (error) {
      thrown = error;
    } finally {
      clearTimeout(timer);
    }
    return { view, result, thrown };
  }

  /** Ends the slice's job by what the slice did, under the claim. */
  async #conclude(
    slice: Slice,
    advanced: { view: TrackedStore | undefined; result: RunResult | undefined; thrown: unknown },
  ): Promise<void> {
    const { view, result, thrown } = advanced;
    const { runId, finish } = slice;
    if (view?.fenced || isFenced(thrown)) {
      // Another worker owns the run now: touch neither the log nor the job.
      finish("fenced", { error: (view?.fenced ?? (thrown as Error)).message });
      return;
    }
    if (thrown !== undefined || !result) {
      this.#settings.reportError(thrown, `slice of run ${runId}`);
      const message = thrown instanceof Error ? thrown.message : String(thrown);
      if (slice.epoch > 0 && !(await this.#settle(slice, "fail", { error: message }))) {
        finish("fenced", { error: message });
        return;
      }
      finish("failed", { error: message });
      return;
    }
    if (result.why === "run_budget_unavailable" && !view?.ended) {
      // A run budget's store is down: the run took no step. It waits in the queue on a
      // backoff (up to 30 s) instead of coming straight back to a store that fails.
      const { boss, pool, queue } = this.#settings;
      await deferJob(boss, pool, queue, slice.job, slice.data, 30);
      finish("deferred", {
        status: result.status,
        ...(result.error ? { error: result.error } : {}),
      });
      return;
    }
    let outcome: SliceReport["outcome"];
    let action: Action;
    let error: string | undefined;
    if (view?.ended) {
      [outcome, action] = ["ended", "complete"];
    } else if (result.status === "awaiting_approval" || result.status === "awaiting_child") {
      // Parked: on a person, or on a child run queued as its own job (which wakes it).
      [outcome, action] = ["parked", "complete"];
    } else if (view?.conflict) {
      [outcome, action, error] = ["conflict", "continue", view.conflict.message];
    } else if (result.status === "running") {
      [outcome, action] = ["paused", "continue"];
    } else {
      // The run stopped without a run-end (the store failed under it): let pg-boss retry.
      [outcome, action, error] = [
        "failed",
        "fail",
        result.error ?? `run ${runId} stopped as ${result.status} without a run-end`,
      ];
    }
    const settled = await this.#settle(slice, action, {
      outcome,
      status: result.status,
      ...(error ? { error } : {}),
    });
    if (!settled)
      finish("fenced", {
        status: result.status,
        error: `run ${runId} was claimed by another worker before this slice settled`,
      });
    else finish(outcome, { status: result.status, ...(error ? { error } : {}) });
  }

  /** Ends a job under the claim: nothing happens unless the slice's epoch is still the run's epoch. */
  async #settle(slice: Slice, action: Action, detail: object): Promise<boolean> {
    const { pool, boss, queue, store, slots } = this.#settings;
    const { job, runId, epoch, data, slot } = slice;
    // The tenant slot goes back in the same transaction (its first round trip): it commits with
    // the job's end, fenced or not (only this worker's slot matches), or rolls back with it.
    const release =
      slot && slice.slotHeld ? `${slots!.releaseStatement(slot.tenant, runId, slot.holder)}; ` : "";
    const settled = await inTransaction(
      pool,
      async (client, rows) => {
        if (Number(rows[0]?.epoch ?? 0) !== epoch) return false;
        const db = queueDb(client);
        if (action === "fail") {
          await boss.fail(queue.queue, job.id, detail, { db });
          return true;
        }
        await boss.complete(queue.queue, job.id, detail, { db });
        // A child that ended or waits on a person wakes its parent, in the same transaction:
        // the parent's call runs again and reads the child's outcome from its log.
        if (slice.parentRunId && wakesParent(detail))
          await boss.send(
            queue.queue,
            {
              runId: slice.parentRunId,
              ...(data.tenant !== undefined ? { tenant: data.tenant } : {}),
              ...(data.priority !== undefined ? { priority: data.priority } : {}),
            },
            {
              ...jobSettings(queue),
              singletonKey: slice.parentRunId,
              ...(typeof data.priority === "number" ? { priority: data.priority } : {}),
              db,
            },
          );
        if (action === "continue") {
          // The next slice's queue wait starts when it is sent.
          const { task: _task, queuedAt: _queuedAt, ...next } = data;
          await boss.send(queue.queue, next, {
            ...jobSettings(queue),
            singletonKey: runId,
            ...(typeof data.priority === "number" ? { priority: data.priority } : {}),
            db,
          });
        }
        return true;
      },
      // BEGIN and the check in one round trip (a simple query: no parameters, so the run id,
      // checked by assertRunId to letters, digits and _.:-, is written in as a literal).
      // FOR SHARE makes a concurrent claim (an UPDATE of this row) wait for this transaction.
      `BEGIN; ${release}SELECT epoch FROM "${store.schema}".runs WHERE run_id = '${runId}' FOR SHARE`,
    );
    if (release) slice.slotReleased = true;
    return settled;
  }

  /** Holds a job to this worker's lease when it was sent with another (before the queue had ours). */
  async #holdToLease(job: QueueJob): Promise<void> {
    const { queue, pool } = this.#settings;
    const seconds = queue.leaseMs / 1000;
    if (job.expireInSeconds === undefined || Number(job.expireInSeconds) === seconds) return;
    await pool.query(
      `UPDATE "${queue.bossSchema}".job SET expire_in = $3 * interval '1 second' WHERE name = $1 AND id = $2 AND state = 'active'`,
      [queue.queue, job.id, seconds],
    );
  }
}

/** Whether a slice's outcome wakes the run's parent: the child ended, or parked on a person. */
function wakesParent(detail: object): boolean {
  const { outcome, status } = detail as { outcome?: string; status?: string };
  return outcome === "ended" || (outcome === "parked" && status === "awaiting_approval");
}

/** The job's data when it names a run; undefined for a job not sent by `submitRun`. */
function readJobData(data: unknown): RunJobData | undefined {
  if (!data || typeof data !== "object") return undefined;
  const record = data as Record<string, unknown>;
  if (typeof record.runId !== "string" || record.runId === "") return undefined;
  return record as unknown as RunJobData;
}
