import type {
  ApprovalAnswer,
  EventStore,
  FreezeStatus,
  FreezeStore,
  RunSummary,
  StoredEvent,
} from "@loopguard/core";

/** How a served agent's runs are answered, resumed and halted. */
export interface WebBackend {
  /** `jsonl` (a runs directory) or `postgres` (the worker fleet's database). */
  readonly kind: "jsonl" | "postgres";
  /** Where the runs live, for the page header (no secrets). */
  readonly where: string;
  readonly store: EventStore;
  /** The JSONL runs directory, watched so a refresh re-reads only the runs that changed. */
  readonly watchDir?: string;
  readonly freezeStore: FreezeStore;
  /** The serving agent's policy digest; approvals bound to another one are stale. */
  readonly policyDigest?: string;
  /** Redacts what the pages show (arguments, tasks, answers, trace content). */
  redact(value: unknown): unknown;
  /**
   * Records a person's answer and lets the run go on: in process for a runs directory, through
   * the workers' queue over PostgreSQL. Resolves with the run's status after the answer, or
   * with `wait`, after the run has gone on as far as it can (the webhook's behaviour).
   */
  answer(
    runId: string,
    answer: ApprovalAnswer,
    options?: { wait?: boolean },
  ): Promise<{ status: string }>;
  /** Resumes a run that is not finished (a crashed or paused one). */
  resume(runId: string): Promise<{ status: string }>;
  /** Halts a run for good: writes a `run-halt` and ends it as halted. */
  halt(runId: string, reason: string, by: string): Promise<{ status: string }>;
  close(): Promise<void>;
}

/** One page of the run list. */
export interface RunPage {
  runs: RunSummary[];
  /** Pass back as `cursor` for the next page; absent on the last page. */
  next?: string;
  total: number;
}

/** Filters of the run list. */
export interface RunQuery {
  status?: string;
  agentId?: string;
  limit: number;
  cursor?: string;
}

/**
 * One page of runs, newest first. The cursor is the `updatedAt` and run id of the last row
 * shown, so a run that changes while someone pages moves to the top instead of appearing twice.
 */
export function pageOf(sorted: readonly RunSummary[], query: RunQuery): RunPage {
  let start = 0;
  if (query.cursor) {
    const [at, id] = decodeCursor(query.cursor);
    start = sorted.findIndex(
      (row) => row.updatedAt < at || (row.updatedAt === at && row.runId > id),
    );
    if (start < 0) start = sorted.length;
  }
  const runs = sorted.slice(start, start + query.limit);
  const last = runs.at(-1);
  return {
    runs,
    total: sorted.length,
    ...(last && start + query.limit < sorted.length
      ? { next: encodeCursor(last.updatedAt, last.runId) }
      : {}),
  };
}

const encodeCursor = (at: number, runId: string) =>
  Buffer.from(JSON.stringify([at, runId])).toString("base64url");

function decodeCursor(cursor: string): [number, string] {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(parsed) && typeof parsed[0] === "number" && typeof parsed[1] === "string")
      return [parsed[0], parsed[1]];
  } catch {
    // fall through
  }
  throw new RangeError("cursor is not one this server gave out: start from the first page");
}

/** Reads a run, turning a corrupt log into an error the page shows instead of a crash. */
export async function readRun(
  store: EventStore,
  runId: string,
): Promise<{ events: StoredEvent[]; error?: string }> {
  try {
    return { events: await store.read(runId) };
  } catch (error) {
    return { events: [], error: error instanceof Error ? error.message : String(error) };
  }
}

/** The fleet's freeze state, or why it cannot be read (the kill switch then refuses every call). */
export async function freezeState(store: FreezeStore): Promise<FreezeStatus & { error?: string }> {
  try {
    return await store.status();
  } catch (error) {
    return {
      frozen: true,
      error: `cannot read the freeze state (${error instanceof Error ? error.message : String(error)}): the kill switch refuses every call until it can`,
    };
  }
}
