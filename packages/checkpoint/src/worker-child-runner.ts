import { createHash } from "node:crypto";
import type { ChildRunner } from "@loopguard/core";
import type { PgPool } from "./postgres-pool.js";
import {
  jobSettings,
  type QueueClient,
  queueDb,
  type ResolvedQueueOptions,
  type RunJobData,
} from "./worker-queue.js";

/** What a slice's child runner needs: the queue, and the job data its children inherit. */
export interface QueueChildRunnerSettings {
  boss: QueueClient;
  pool: PgPool;
  queue: ResolvedQueueOptions;
  /** The slice's job data: a child job keeps its tenant and priority. */
  data: RunJobData;
  /** Lets the slice's store view write this child's `run-start`. */
  permit?: (childRunId: string) => void;
}

/**
 * The pg-boss job id of a child run's first job: a UUID derived from the run id, so however
 * many times the parent's call runs (a resume, a retry, a worker that lost its claim), the
 * child is queued once: pg-boss inserts a job id once.
 */
export function childJobId(runId: string): string {
  const hex = createHash("sha256").update(`loopguard child job\n${runId}`).digest("hex");
  // Laid out as a version 5 style UUID (the variant and version nibbles set).
  return [
    hex.slice(0, 8),
    hex.slice(8, 12),
    `5${hex.slice(13, 16)}`,
    ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16) + hex.slice(17, 20),
    hex.slice(20, 32),
  ].join("-");
}

/**
 * The child runner of one slice: an `asTool` call's child runs as a job of its own on the
 * workers' queue (any worker may take it, under its own claim, lease and fencing epoch), and the
 * parent parks as `awaiting_child`. A child that already ended, or waits on an approval, is
 * answered from its log without queuing anything. The worker that ends (or parks) the child
 * queues its parent again, whose call then runs once more and reads the child's outcome.
 */
export function queueChildRunner(settings: QueueChildRunnerSettings): ChildRunner {
  const { boss, pool, queue, data, permit } = settings;
  return {
    name: "pg-boss",
    async run(request, control) {
      const recorded = await control.recorded();
      if (recorded) return recorded;
      // The child's run-start (its task, caps and parent), once; then its job, once.
      permit?.(request.childRunId);
      await control.create();
      const job: RunJobData = {
        runId: request.childRunId,
        ...(data.tenant !== undefined ? { tenant: data.tenant } : {}),
        ...(data.priority !== undefined ? { priority: data.priority } : {}),
      };
      await boss.send(queue.queue, job, {
        ...jobSettings(queue),
        id: childJobId(request.childRunId),
        singletonKey: request.childRunId,
        ...(data.priority !== undefined ? { priority: data.priority } : {}),
        db: queueDb(pool),
      });
      return { type: "parked", status: "awaiting_child" };
    },
  };
}
