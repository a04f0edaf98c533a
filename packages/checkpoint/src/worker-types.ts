import type { Agent, ChildRunner, EventStore, RunResult } from "@loopguard/core";
import type { PostgresEventStore } from "./postgres-store-types.js";
import type { RunQueueOptions } from "./worker-queue.js";

/** Options of `createWorker`. */
export interface WorkerOptions extends RunQueueOptions {
  /** The PostgreSQL store (its pool carries the queue too), or pass `connectionString`. */
  store?: PostgresEventStore;
  /** Opens a store on this database (and closes it on `stop()`). */
  connectionString?: string;
  /** The store's schema when opened from `connectionString`. Default `loopguard`. */
  schema?: string;
  /**
   * Makes the agent that advances one slice of a run, given the store view it must use (fenced
   * to the run and the worker's claim) and which run and claim it is for (to load per-run state
   * such as a PII vault). Called once per slice; may be async; keep it cheap.
   */
  agent: AgentFactory;
  /**
   * Runs this worker advances at once (one slice each); the others wait in the queue, higher
   * `submitRun({ priority })` first, then in the order they were queued. Each slice reports its
   * wait (`SliceReport.queueWaitMs`; it is also passed to the agent's `run` as `queueWaitMs`,
   * which the log's `run-start` records once core reads that option: today it does not).
   * Default 4.
   */
  concurrency?: number;
  /**
   * At most this many runs of one tenant (`submitRun({ tenant })`) advanced at once across every
   * worker of the database (a number, or a function of the tenant). A job over its tenant's cap
   * goes back to the queue for a second while this worker takes other jobs. Default: no cap.
   */
  tenantConcurrency?: number | ((tenant: string) => number);
  /** How long one job advances a run before it pauses at a step boundary and re-queues it. Default 5 000 ms. */
  sliceMs?: number;
  /** How often an idle worker asks for a job. Default 2 000 ms (pg-boss's minimum is 500). */
  pollingIntervalMs?: number;
  /** How often pg-boss looks for expired leases. Default 5 000 ms (at least 1 000). */
  maintenanceIntervalMs?: number;
  /** A name for diagnostics. Default `worker-<random>`. */
  id?: string;
  /** Hears about every slice (for logs and metrics); errors in it are ignored. */
  onSlice?: (report: SliceReport) => void;
  /** Receives errors of the queue, the store and slices; they never stop the worker. */
  onError?: (error: unknown, where: string) => void;
  /**
   * Hears when the database becomes unreachable (then again at each retry, on a backoff from
   * `pollingIntervalMs` doubling up to `maxBackoffMs`) and when it is back. The same news also
   * reaches `onError` (where `database`) while it is down.
   */
  onStatus?: (status: WorkerStatus) => void;
  /** The longest wait between two attempts to reach a database that is down. Default 30 000 ms. */
  maxBackoffMs?: number;
}

/** What `onStatus` hears: the database went away (at each retry), or came back. */
export type WorkerStatus =
  | {
      type: "database-unreachable";
      workerId: string;
      /** The error of the last attempt. */
      error: string;
      /** Attempts that failed in a row. */
      failures: number;
      /** When the next attempt is made. */
      retryInMs: number;
      /** Since the first failure. */
      downForMs: number;
    }
  | { type: "database-reachable"; workerId: string; downForMs: number };

/** Which run and claim an agent is made for (the second argument of an agent factory). */
export interface SliceContext {
  /** The run the agent will start, resume or answer. */
  runId: string;
  /** The fencing epoch of the claim the store view is bound to. */
  epoch: number;
  /** The worker's id, or `approveQueuedRun` when an approval is recorded. */
  workerId: string;
  /**
   * Runs the children of the agent's `asTool` tools as jobs of their own on the workers' queue
   * (pass it as `createAgent({ childRunner })`): the parent parks as `awaiting_child` and is
   * queued again when its child ends or waits on an approval. Without it, a child of a run on a
   * worker cannot write its log (the slice's store view is fenced to its own run).
   */
  childRunner: ChildRunner;
}

/**
 * Makes the agent of one slice (or of one `approveQueuedRun`), on the store view it must write
 * through. It may return a promise (e.g. after loading the run's vault).
 */
export type AgentFactory = (store: EventStore, slice: SliceContext) => Agent | Promise<Agent>;

/** What one slice of a run did. */
export interface SliceReport {
  workerId: string;
  runId: string;
  jobId: string;
  epoch: number;
  /**
   * `paused` (re-queued), `parked` (awaiting approval, the job is done until someone answers; or
   * awaiting a child run queued as its own job, which queues this run again when it ends),
   * `ended` (the run has its run-end), `fenced` (another worker claimed the run: this one wrote
   * nothing more and left the job alone), `conflict` (another writer appended: re-queued),
   * `failed` (the slice failed; pg-boss retries the job), `skipped` (a job for a run with no log and no task).
   */
  outcome:
    | "paused"
    | "parked"
    | "ended"
    | "fenced"
    | "conflict"
    | "failed"
    | "skipped"
    | "deferred";
  status?: RunResult["status"];
  startedAt: number;
  durationMs: number;
  /**
   * How long the run waited in the queue before this slice, in ms on the database's clock: from
   * its submission (deferrals at a tenant's cap included) for its first slice, from its re-queue
   * for a later one. Absent when the job came without its times.
   */
  queueWaitMs?: number;
  error?: string;
}

/** A worker: advances runs queued on pg-boss, one slice at a time. */
export interface Worker {
  readonly id: string;
  /** Starts polling for jobs (resolves once the queue is ready). */
  start(): Promise<void>;
  /** Stops taking jobs and waits for slices in flight (each ends within `sliceMs` plus one step). */
  stop(): Promise<void>;
  /** The store the worker writes through (its pool also carries the queue). */
  readonly store: PostgresEventStore;
}
