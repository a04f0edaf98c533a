import type { Agent, EventStore } from "@loopguard/core";
import { type DemoPaths, demoAgent } from "./demo-agent.js";

/** Options of `loopguard worker`. */
export interface RunWorkerOptions {
  /** `createWorker` of `@loopguard/checkpoint` (loaded by name: PostgreSQL is optional). */
  createWorker: (options: {
    connectionString: string;
    concurrency: number;
    agent: (store: EventStore) => Agent;
    onSlice?: (report: { runId: string; outcome: string; status?: string }) => void;
    onError?: (error: unknown, where: string) => void;
  }) => { id: string; start(): Promise<void>; stop(): Promise<void> };
  connectionString: string;
  concurrency: number;
  paths: DemoPaths;
  out: (line: string) => void;
}

/**
 * Runs a PostgreSQL worker that advances queued support-desk runs (submitted with
 * `submitRun`) until SIGINT or SIGTERM, then stops taking jobs and waits for slices in flight.
 */
export async function runWorker(options: RunWorkerOptions): Promise<number> {
  // The agent factory is synchronous; the packages it needs are loaded once up front.
  const template = await demoAgent({ paths: options.paths });
  const worker = options.createWorker({
    connectionString: options.connectionString,
    concurrency: options.concurrency,
    agent: (store) => template.withStore(store),
    onSlice: (report) =>
      options.out(
        `slice ${report.runId}: ${report.outcome}${report.status ? ` (${report.status})` : ""}`,
      ),
    onError: (error, where) =>
      options.out(`[worker] ${where}: ${error instanceof Error ? error.message : String(error)}`),
  });
  await worker.start();
  options.out(
    `loopguard worker ${worker.id}: ${options.concurrency} slice(s) at once; stop with Ctrl-C (SIGTERM)`,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  options.out("stopping: waiting for slices in flight");
  await worker.stop();
  return 0;
}
