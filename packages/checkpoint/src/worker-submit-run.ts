import { randomBytes, randomUUID } from "node:crypto";
import {
  type ApprovalAnswer,
  InvalidArgumentError,
  type JsonValue,
  type RunResult,
} from "@loopguard/core";
import type { PostgresEventStore } from "./postgres-event-store.js";
import {
  resolveSubmitRetry,
  type SubmitRetryOptions,
  submitConnection,
  unreachableSubmitError,
  withConnectionRetry,
} from "./submit-connections.js";
import { queueChildRunner } from "./worker-child-runner.js";
import {
  ensureQueue,
  openQueue,
  type QueueClient,
  type ResolvedQueueOptions,
  type RunJobData,
  type RunQueueOptions,
  resolveQueueOptions,
  submitJobSettings,
} from "./worker-queue.js";
import type { AgentFactory } from "./worker-types.js";

/** Where runs are queued: a started pg-boss, or how to reach the database. */
export interface RunQueueTarget extends RunQueueOptions {
  /** A started pg-boss 10 instance on the workers' database; else one is started for the call. */
  boss?: QueueClient;
  /** The event store (needed by `approveQueuedRun`; its pool carries the queue when `boss` is absent). */
  store?: PostgresEventStore;
  /**
   * Reaches this database through a small pool, store and pg-boss made on the first call and
   * reused by later ones with the same string, schema and queue (`closeSubmitConnections()`
   * closes them; an idle one never keeps the process alive).
   */
  connectionString?: string;
  /**
   * How `submitRun` retries a connection error (refused, reset, the server shutting down or
   * starting): up to `maxAttempts` (8) with a doubling wait from `baseDelayMs` (100) to
   * `maxDelayMs` (2 000); `false` tries once. A retry reuses the job's id, so a submission
   * whose answer was lost is never queued twice.
   */
  retry?: SubmitRetryOptions | false;
  /** The store's schema. Default `loopguard`. */
  schema?: string;
}

/** Options of `submitRun`. */
export interface SubmitRunOptions {
  /** The run's id. Default `run_<16 hex>`. Submitting an id that already has a log re-queues that run. */
  runId?: string;
  /** Roles and attributes recorded in the run's `run-start`. */
  context?: { roles?: string[]; attributes?: Record<string, JsonValue> };
  /**
   * The run's tenant: recorded as the run context's `tenant` attribute (what `tenantBudget`
   * counts) and used by the workers' `tenantConcurrency`.
   */
  tenant?: string;
  /**
   * Higher runs are taken first by the workers, on every slice (a whole number, -1e6 to 1e6;
   * recorded as the run context's `priority` attribute). Default 0.
   */
  priority?: number;
}

/** What `submitRun` did. */
export interface SubmitRunResult {
  runId: string;
  /** The job's id, or `null` when a job for this run was already queued (it will advance the run). */
  jobId: string | null;
}

/**
 * Queues a new run for the workers. It writes nothing to the run's log: the first worker that
 * takes the job writes the `run-start` (with `expectedSeq` 0, so exactly once however many
 * times the job is delivered), using its own agent's model, tools and policy digests.
 *
 * @example
 * const { runId } = await submitRun({ connectionString: process.env.DATABASE_URL }, "Order A1001 arrived broken, refund please");
 * // in a server, reuse one pg-boss: await submitRun({ boss }, task)
 */
export async function submitRun(
  target: RunQueueTarget,
  task: string,
  options: SubmitRunOptions = {},
): Promise<SubmitRunResult> {
  const where = "submitRun";
  if (typeof task !== "string" || task.trim() === "")
    throw new InvalidArgumentError(
      `[checkpoint] ${where}(target, task): task must be a non-empty string describing what the agent should do`,
    );
  if (!options || typeof options !== "object")
    throw new InvalidArgumentError(`[checkpoint] ${where}: options must be an object`);
  const runId = options.runId ?? `run_${randomBytes(8).toString("hex")}`;
  checkRunId(runId, where);
  const { tenant, priority } = checkTenantAndPriority(options, where);
  // Recorded in the run-start: tenantBudget reads the tenant, approveQueuedRun re-queues with both.
  const context =
    tenant === undefined && priority === undefined
      ? options.context
      : {
          ...options.context,
          attributes: {
            ...options.context?.attributes,
            ...(tenant !== undefined ? { tenant } : {}),
            ...(priority !== undefined ? { priority } : {}),
          },
        };
  const data: RunJobData = {
    runId,
    task,
    ...(context ? { context } : {}),
    ...(tenant !== undefined ? { tenant } : {}),
    ...(priority !== undefined ? { priority } : {}),
  };
  const retry = resolveSubmitRetry(target?.retry, where);
  // One id for every attempt: pg-boss inserts a job id once (ON CONFLICT DO NOTHING).
  const id = randomUUID();
  const jobId = await withConnectionRetry(
    retry,
    (attempt) =>
      withQueue(target, where, false, async (boss, settings) => {
        const sent = await boss.send(settings.queue, data, {
          ...submitJobSettings(settings),
          id,
          singletonKey: runId,
          ...(priority !== undefined ? { priority } : {}),
        });
        // A retry after a lost answer: the first attempt may have queued it after all.
        if (sent === null && attempt > 1 && (await boss.getJobById?.(settings.queue, id)))
          return id;
        return sent;
      }),
    (error, attempts) =>
      unreachableSubmitError(error, attempts, target.connectionString, runId, where),
  );
  return { runId, jobId };
}

/** Options of `approveQueuedRun`. */
export interface ApproveRunOptions {
  /** The agent factory the workers use; it records the answer through a store view fenced to this call's claim. */
  agent: AgentFactory;
}

/**
 * Answers a parked approval from any process and re-queues the run, so another worker
 * finishes it. It first claims the run (raising its fencing epoch, so any stale worker is
 * fenced off), records the answer with `agent.approve(runId, answer, { resume: false })`, and
 * queues a job once no approval is left open.
 *
 * @example
 * await approveQueuedRun({ connectionString: process.env.DATABASE_URL }, runId, { decision: "approve", approver: "ana@acme.com" }, { agent: makeAgent });
 */
export async function approveQueuedRun(
  target: RunQueueTarget,
  runId: string,
  answer: ApprovalAnswer,
  options: ApproveRunOptions,
): Promise<RunResult> {
  const where = "approveQueuedRun";
  checkRunId(runId, where);
  if (!options || typeof options.agent !== "function")
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: options.agent must be the agent factory (store) => Agent the workers use`,
    );
  return withQueue(target, where, true, async (boss, settings, store) => {
    const epoch = await store.claim(runId);
    const agent = await options.agent(store.fenced(runId, epoch), {
      runId,
      epoch,
      workerId: "approveQueuedRun",
      // The answer is only recorded here (no drive): a child it would start runs on the workers.
      childRunner: queueChildRunner({
        boss,
        pool: await store.pool(),
        queue: settings,
        data: { runId },
      }),
    });
    if (!agent || typeof agent.approve !== "function")
      throw new InvalidArgumentError(
        `[checkpoint] ${where}: the agent factory must return an agent made with createAgent`,
      );
    const result = await agent.approve(runId, answer, { resume: false });
    if (result.status !== "awaiting_approval") {
      // The next slice keeps the run's tenant and priority, recorded in its run-start.
      const [start] = await store.read(runId);
      const recorded = start?.type === "run-start" ? start.context : undefined;
      const tenant = typeof recorded?.tenant === "string" ? recorded.tenant : undefined;
      const priority = Number.isSafeInteger(recorded?.priority)
        ? (recorded?.priority as number)
        : undefined;
      const data: RunJobData = {
        runId,
        ...(tenant !== undefined ? { tenant } : {}),
        ...(priority !== undefined ? { priority } : {}),
      };
      await boss.send(settings.queue, data, {
        ...submitJobSettings(settings),
        singletonKey: runId,
        ...(priority !== undefined ? { priority } : {}),
      });
    }
    return result;
  });
}

async function withQueue<T>(
  target: RunQueueTarget,
  where: string,
  needsStore: boolean,
  work: (
    boss: QueueClient,
    settings: ResolvedQueueOptions,
    store: PostgresEventStore,
  ) => Promise<T>,
): Promise<T> {
  if (!target || typeof target !== "object")
    throw new InvalidArgumentError(
      `[checkpoint] ${where}(target, ...): target must be { boss } or { connectionString } or { store }`,
    );
  if (target.store && target.connectionString)
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: pass store or connectionString, not both`,
    );
  if (!target.boss && !target.store && !target.connectionString)
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: pass boss (a started pg-boss), store or connectionString`,
    );
  if (needsStore && !target.store && !target.connectionString)
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: pass store or connectionString: the answer is written to the run's log`,
    );
  const schema = target.store?.schema ?? target.schema ?? "loopguard";
  const settings = resolveQueueOptions(target, schema, where);
  if (!target.store && target.connectionString !== undefined) {
    if (!/^postgres(ql)?:\/\//.test(target.connectionString))
      throw new InvalidArgumentError(
        `[checkpoint] ${where}: connectionString must start with postgres:// or postgresql://`,
      );
    // Reused across calls: the pool, the store (migrated once) and a started pg-boss.
    const cached = await submitConnection(target.connectionString, schema, settings, where);
    if (target.boss) await ensureQueue(target.boss, settings);
    return work(target.boss ?? cached.boss, settings, cached.store);
  }
  const store = target.store;
  let boss = target.boss;
  const ownsBoss = boss === undefined;
  try {
    if (!boss) boss = await openQueue(await store!.pool(), settings, { supervise: false }, where);
    else await ensureQueue(boss, settings);
    return await work(boss, settings, store as PostgresEventStore);
  } finally {
    if (ownsBoss)
      await boss?.stop({ graceful: false, close: false, wait: true }).catch(() => undefined);
  }
}

function checkTenantAndPriority(
  options: SubmitRunOptions,
  where: string,
): { tenant: string | undefined; priority: number | undefined } {
  const { tenant, priority } = options;
  if (
    tenant !== undefined &&
    (typeof tenant !== "string" || !/^[A-Za-z0-9_.:@-]{1,128}$/.test(tenant))
  )
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: tenant ${JSON.stringify(tenant)} is invalid: use 1 to 128 letters, digits, "_", ".", ":", "@" or "-"`,
    );
  if (priority !== undefined && (!Number.isSafeInteger(priority) || Math.abs(priority) > 1_000_000))
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: priority must be a whole number from -1000000 to 1000000 (higher runs first), got ${String(priority)}`,
    );
  return { tenant, priority };
}

function checkRunId(runId: unknown, where: string): asserts runId is string {
  if (typeof runId !== "string" || !/^[A-Za-z0-9_.:-]{1,128}$/.test(runId)) {
    throw new InvalidArgumentError(
      `[checkpoint] ${where}: runId ${JSON.stringify(runId)} is invalid: use 1 to 128 letters, digits, "_", ".", ":" or "-"`,
    );
  }
}
