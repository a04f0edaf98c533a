import {
  AppendConflictError,
  type AppendOptions,
  type AppendResult,
  CorruptLogError,
  type EventStore,
  InvalidArgumentError,
  type ListFilter,
  type RunSummary,
  type StoredEvent,
  type StoredEventInput,
} from "@loopguard/core";
import { summarize } from "@loopguard/core/plugin";
import { checkBatchSize } from "./batch-size.js";
import {
  advance,
  chainSettings,
  chainStart,
  genesis,
  link,
  runRowMismatch,
  type VerifyResult,
  verifiedLog,
} from "./hash-chain.js";
import { FencedError, PostgresStoreError } from "./postgres-errors.js";
import { migrate } from "./postgres-migrations.js";
import {
  lazyPool,
  openPool,
  type PgPool,
  type PostgresConnectionOptions,
  statementName,
  unreachableError,
  validateConnection,
} from "./postgres-pool.js";
import { assertRunId } from "./run-id.js";
import { validateFilter } from "./validate-filter.js";

/** Options of `postgresEventStore`: a pool or a connection string, a schema name, the log key. */
export interface PostgresEventStoreOptions extends PostgresConnectionOptions {
  /** The key of the log's HMAC chain. Default: `LOOPGUARD_LOG_KEY`; without either, SHA-256. */
  logKey?: string | Buffer;
  /** Chains new events (default true). `false` only to measure what the chain costs. */
  hashChain?: boolean;
}

/** Options of one append to the PostgreSQL store. */
export interface PostgresAppendOptions extends AppendOptions {
  /**
   * The fencing epoch the writer holds (from `claim`). When set, the append is refused with
   * `FencedError` unless it is still the run's epoch, checked in the insert's transaction.
   */
  epoch?: number;
}

/** An EventStore bound to one run and one fencing epoch: what a worker hands its agent. */
export interface FencedEventStore extends EventStore {
  readonly runId: string;
  readonly epoch: number;
  /**
   * Rejects with `FencedError` unless `epoch` is still the run's epoch (one indexed read).
   * Core calls it right before each tool runs, so a worker that was paused past its lease
   * and lost its claim executes nothing when it wakes.
   */
  confirmOwner(runId: string): Promise<void>;
}

/** The EventStore on PostgreSQL, with fencing epochs for multi-worker runs. */
export interface PostgresEventStore extends EventStore {
  readonly name: "postgres";
  /** The schema the tables live in. */
  readonly schema: string;
  /** The pool the store uses (opened on first use). */
  pool(): Promise<PgPool>;
  /** Creates the schema and applies pending migrations (done on first use anyway). */
  migrate(): Promise<void>;
  /** Appends events; with `epoch`, only while the writer's claim stands. */
  append(
    runId: string,
    events: readonly StoredEventInput[],
    options: PostgresAppendOptions,
  ): Promise<AppendResult>;
  /**
   * Claims a run: raises its fencing epoch and returns the new one. Every writer holding an
   * older epoch is fenced off from that moment: its next fenced append is refused.
   */
  claim(runId: string): Promise<number>;
  /**
   * Claims a run and reads its log in one round trip: what a worker does at the start of every
   * slice. `events` is the whole log as of the claim (empty for a run that has none yet).
   */
  claimAndRead(runId: string): Promise<{ epoch: number; events: StoredEvent[] }>;
  /** The run's current epoch (0 when it was never claimed). */
  epochOf(runId: string): Promise<number>;
  /** A view of the store whose appends to `runId` are fenced by `epoch`. */
  fenced(runId: string, epoch: number): FencedEventStore;
  /**
   * Checks a run's log end to end: every row's seq and JSON, the hash chain (each link, with
   * the key when one is set), and the head kept in the run's row (a log cut short). Never
   * throws for a damaged log: the result names the first bad seq and why.
   */
  verify(runId: string): Promise<VerifyResult>;
  /**
   * Reads a run's log in order, `batchSize` events at a time (default 1 000), one keyset page
   * query each, checking the chain across pages.
   */
  readBatches(runId: string, options?: { batchSize?: number }): AsyncIterable<StoredEvent[]>;
  /** Ends the pool when the store opened it; safe to call twice. */
  close(): Promise<void>;
}

/**
 * Creates an EventStore on PostgreSQL: one row per event in `<schema>.events`, a summary per
 * run in `<schema>.runs` updated in the same transaction, and a fencing epoch per run so a
 * worker that lost its claim can never append again. Tables are created and migrated on first
 * use. Needs the optional peer `pg`.
 *
 * @example
 * const store = postgresEventStore({ connectionString: process.env.DATABASE_URL });
 * const agent = createAgent({ model, tools, store });
 * // in a worker: const epoch = await store.claim(runId); createAgent({ ..., store: store.fenced(runId, epoch) })
 */
export function postgresEventStore(options: PostgresEventStoreOptions): PostgresEventStore {
  const where = "postgresEventStore";
  const { schema, quoted: s } = validateConnection(options, where);
  const chain = chainSettings(options, where);
  // The statements of every slice are prepared once per connection (named), so PostgreSQL
  // parses and plans the append's CTE once, not on every append.
  const names = {
    append: statementName("append_v2", schema),
    claim: statementName("claim", schema),
    claimRead: statementName("claim_read_v2", schema),
    read: statementName("read_v2", schema),
    readPage: statementName("read_page", schema),
    runRow: statementName("run_row_v2", schema),
  };
  // The last summary this process wrote per run, so an append usually needs one round trip.
  const summaries = new Map<
    string,
    { nextSeq: number; summary: RunSummary; head: string | undefined }
  >();
  const remember = (
    runId: string,
    nextSeq: number,
    summary: RunSummary,
    head: string | undefined,
  ) => {
    summaries.delete(runId);
    summaries.set(runId, { nextSeq, summary, head });
    if (summaries.size > 10_000) summaries.delete(summaries.keys().next().value as string);
  };

  const { ready, close } = lazyPool({
    store: "event",
    schema,
    open: () => openPool(options, where),
    prepare: (pool) => migrate(pool, schema, s),
    prepareError: (error) => unreachableError(error, options, where),
  });

  // Appends to one run issued by this process are applied in the order they were issued
  // (core's writer may pipeline them), so they cannot overtake each other on two connections.
  const queues = new Map<string, Promise<unknown>>();
  const append = (
    runId: string,
    events: readonly StoredEventInput[],
    appendOptions: PostgresAppendOptions,
  ): Promise<AppendResult> => {
    const previous = queues.get(runId) ?? Promise.resolve();
    const next = previous.then(() => appendNow(runId, events, appendOptions));
    const settled = next.catch(() => undefined);
    queues.set(runId, settled);
    void settled.then(() => {
      if (queues.get(runId) === settled) queues.delete(runId);
    });
    return next;
  };

  const appendNow = async (
    runId: string,
    events: readonly StoredEventInput[],
    appendOptions: PostgresAppendOptions,
  ): Promise<AppendResult> => {
    checkRunId(runId, "append");
    if (!Array.isArray(events))
      throw new InvalidArgumentError(
        `[checkpoint] postgresEventStore.append(${runId}): events must be an array`,
      );
    const expectedSeq = appendOptions?.expectedSeq;
    if (!Number.isInteger(expectedSeq) || expectedSeq < 0) {
      throw new InvalidArgumentError(
        `[checkpoint] postgresEventStore.append(${runId}): expectedSeq must be a non-negative integer, got ${JSON.stringify(expectedSeq)}`,
      );
    }
    const epoch = appendOptions.epoch;
    if (epoch !== undefined && (!Number.isInteger(epoch) || epoch < 1)) {
      throw new InvalidArgumentError(
        `[checkpoint] postgresEventStore.append(${runId}): epoch must be a positive integer from claim(), got ${JSON.stringify(epoch)}`,
      );
    }
    for (const [index, event] of events.entries()) {
      if (
        !event ||
        typeof event !== "object" ||
        typeof (event as { type?: unknown }).type !== "string"
      ) {
        throw new InvalidArgumentError(
          `[checkpoint] postgresEventStore.append(${runId}): events[${index}] must be an event object with a string type`,
        );
      }
    }
    const pool = await ready();
    if (events.length === 0) {
      const { rows } = await pool.query(`SELECT epoch, next_seq FROM ${s}.runs WHERE run_id = $1`, [
        runId,
      ]);
      const actual = Number(rows[0]?.next_seq ?? 0);
      if (epoch !== undefined && Number(rows[0]?.epoch ?? 0) !== epoch)
        throw new FencedError(runId, epoch, Number(rows[0]?.epoch ?? 0), expectedSeq, actual);
      if (actual !== expectedSeq) throw new AppendConflictError(runId, expectedSeq, actual);
      return { nextSeq: actual };
    }
    const seqs: number[] = [];
    const ats: number[] = [];
    const types: string[] = [];
    const bodies: string[] = [];
    const stored: StoredEvent[] = [];
    for (const [index, event] of events.entries()) {
      const { seq: _ignored, ...rest } = event as StoredEventInput & { seq?: unknown };
      const body = JSON.stringify(rest);
      const copy = {
        ...(JSON.parse(body) as StoredEventInput),
        seq: expectedSeq + index,
      } as StoredEvent;
      seqs.push(copy.seq);
      ats.push(
        typeof copy.at === "number" && Number.isFinite(copy.at) ? Math.round(copy.at) : Date.now(),
      );
      types.push(copy.type);
      bodies.push(body);
      stored.push(copy);
    }
    // The summary is a function of the log's prefix, so the one cached (or read) at
    // next_seq = expectedSeq is the right base whenever the guarded write below succeeds.
    let previous: RunSummary | undefined;
    // The chain continues from the run's head (none: a log from before the chain).
    let head: string | undefined = chain.enabled ? genesis(runId) : undefined;
    if (expectedSeq > 0) {
      const cached = summaries.get(runId);
      if (cached?.nextSeq === expectedSeq) {
        previous = cached.summary;
        head = cached.head;
      } else {
        const { rows } = await pool.query({
          name: names.runRow,
          text: `SELECT next_seq, summary, head FROM ${s}.runs WHERE run_id = $1`,
          values: [runId],
        });
        if (Number(rows[0]?.next_seq ?? 0) === expectedSeq && typeof rows[0]?.summary === "string")
          previous = JSON.parse(rows[0].summary) as RunSummary;
        // Read with next_seq: the guarded write below fails unless it is still the head.
        head = typeof rows[0]?.head === "string" ? rows[0].head : undefined;
      }
    }
    if (head?.startsWith("hmac:") && !chain.key)
      throw new PostgresStoreError(
        `[checkpoint] run ${runId} (schema ${schema}) is chained with an HMAC key, and this store has none: set LOOPGUARD_LOG_KEY (or logKey) to the key the run was written with before appending to it`,
      );
    const chains: Array<string | null> = [];
    for (const [index, body] of bodies.entries()) {
      if (head !== undefined) head = link(head, chainText(expectedSeq + index, body), chain.key);
      chains.push(head ?? null);
    }
    const summary = summarize(previous, runId, stored);
    const nextSeq = expectedSeq + events.length;
    // One statement, so one atomic step: the guarded upsert of the run's row (seq and epoch
    // checked on the row's latest version, under its row lock) and the insert of the events
    // happen together or not at all. A claim (an UPDATE of the same row) waits for it.
    const { rows } = await pool.query({
      name: names.append,
      text: `WITH guard AS (
         INSERT INTO ${s}.runs AS r (run_id, next_seq, status, agent_id, created_at, updated_at, summary, head)
         SELECT $1, $7, $8, $9, $10, $11, $12, $15 WHERE $13::integer = 0 AND $2::bigint IS NULL
         ON CONFLICT (run_id) DO UPDATE SET next_seq = excluded.next_seq, status = excluded.status, agent_id = excluded.agent_id,
           created_at = excluded.created_at, updated_at = excluded.updated_at, summary = excluded.summary, head = excluded.head
         WHERE r.next_seq = $13 AND ($2::bigint IS NULL OR r.epoch = $2)
         RETURNING r.epoch
       ), fenced_update AS (
         UPDATE ${s}.runs SET next_seq = $7, status = $8, agent_id = $9, created_at = $10, updated_at = $11, summary = $12, head = $15
         WHERE run_id = $1 AND NOT ($13::integer = 0 AND $2::bigint IS NULL) AND next_seq = $13 AND ($2::bigint IS NULL OR epoch = $2)
         RETURNING epoch
       ), written AS (
         SELECT epoch FROM guard UNION ALL SELECT epoch FROM fenced_update
       ), inserted AS (
         INSERT INTO ${s}.events (run_id, seq, epoch, at, type, body, chain)
         SELECT $1, input.seq, (SELECT epoch FROM written LIMIT 1), input.at, input.type, input.body, input.chain
         FROM unnest($3::integer[], $4::bigint[], $5::text[], $6::text[], $14::text[]) AS input(seq, at, type, body, chain)
         WHERE EXISTS (SELECT 1 FROM written)
       )
       SELECT epoch FROM written`,
      values: [
        runId,
        epoch ?? null,
        seqs,
        ats,
        types,
        bodies,
        nextSeq,
        summary.status,
        summary.agentId ?? null,
        Math.round(summary.createdAt),
        Math.round(summary.updatedAt),
        JSON.stringify(summary),
        expectedSeq,
        chains,
        head ?? null,
      ],
    });
    if (rows.length === 0) {
      summaries.delete(runId);
      const current = await pool.query(`SELECT epoch, next_seq FROM ${s}.runs WHERE run_id = $1`, [
        runId,
      ]);
      const currentEpoch = Number(current.rows[0]?.epoch ?? 0);
      const actual = Number(current.rows[0]?.next_seq ?? 0);
      if (epoch !== undefined && currentEpoch !== epoch)
        throw new FencedError(runId, epoch, currentEpoch, expectedSeq, actual);
      throw new AppendConflictError(runId, expectedSeq, actual);
    }
    remember(runId, nextSeq, summary, head);
    return { nextSeq };
  };

  /** A run's rows in seq order (after checking the run id for `method`). */
  const rowsOf = async (runId: string, method: string) => {
    checkRunId(runId, method);
    const pool = await ready();
    const { rows } = await pool.query({
      name: names.read,
      text: `SELECT seq, body, chain FROM ${s}.events WHERE run_id = $1 ORDER BY seq`,
      values: [runId],
    });
    return rows;
  };

  const read = async (runId: string): Promise<StoredEvent[]> => {
    return parseRows(runId, await rowsOf(runId, "read"));
  };

  const parseRows = (runId: string, rows: Record<string, unknown>[]): StoredEvent[] => {
    // The chain is checked on every read: resume refuses a log that was tampered with.
    const cursor = chainStart(runId, chain.key);
    let index = 0;
    try {
      return rows.map((row, position) => {
        index = position;
        return parseRow(runId, row, position, cursor);
      });
    } catch (error) {
      // The position of the first bad event, for verify.
      throw Object.assign(error as Error, { seq: index });
    }
  };

  const parseRow = (
    runId: string,
    row: Record<string, unknown>,
    index: number,
    cursor: ReturnType<typeof chainStart>,
  ): StoredEvent => {
    {
      const seq = Number(row.seq);
      let body: unknown;
      try {
        body = JSON.parse(row.body as string);
      } catch (error) {
        throw new CorruptLogError(
          `[checkpoint] run ${runId} event ${seq} (table ${schema}.events) is not valid JSON: the row was damaged outside loopguard; restore it from a backup`,
          { cause: error },
        );
      }
      if (
        seq !== index ||
        !body ||
        typeof body !== "object" ||
        typeof (body as { type?: unknown }).type !== "string"
      ) {
        throw new CorruptLogError(
          `[checkpoint] run ${runId} event ${seq} (table ${schema}.events) is not an event at position ${index}: the row was damaged outside loopguard; restore it from a backup`,
        );
      }
      const broken = advance(
        cursor,
        chainText(seq, row.body as string),
        typeof row.chain === "string" ? row.chain : undefined,
      );
      if (broken)
        throw new CorruptLogError(
          `[checkpoint] run ${runId} event ${seq} (table ${schema}.events): ${broken}; loopguard never skips a damaged event: restore the run from a backup`,
        );
      return { ...(body as StoredEventInput), seq } as StoredEvent;
    }
  };

  async function* readBatches(
    runId: string,
    batchOptions: { batchSize?: number } = {},
  ): AsyncGenerator<StoredEvent[]> {
    checkRunId(runId, "readBatches");
    const batchSize = checkBatchSize(batchOptions.batchSize, "postgresEventStore.readBatches");
    const pool = await ready();
    const cursor = chainStart(runId, chain.key);
    // Keyset pages by seq: one indexed range read each, the chain checked across pages.
    for (let from = 0; ; from += batchSize) {
      const { rows } = await pool.query({
        name: names.readPage,
        text: `SELECT seq, body, chain FROM ${s}.events WHERE run_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`,
        values: [runId, from, batchSize],
      });
      const events = rows.map((row, index) => parseRow(runId, row, from + index, cursor));
      if (events.length > 0) yield events;
      if (rows.length < batchSize) return;
    }
  }

  const verify = async (runId: string): Promise<VerifyResult> => {
    const rows = await rowsOf(runId, "verify");
    const pool = await ready();
    try {
      parseRows(runId, rows);
    } catch (error) {
      const seq = (error as { seq?: number }).seq ?? 0;
      return { ok: false, runId, firstBadSeq: seq, events: seq, reason: (error as Error).message };
    }
    if (rows.length === 0)
      return {
        ok: false,
        runId,
        firstBadSeq: 0,
        events: 0,
        reason: `no log: run ${runId} has no events in ${schema}.events`,
      };
    const run = (
      await pool.query(`SELECT next_seq, head FROM ${s}.runs WHERE run_id = $1`, [runId])
    ).rows[0];
    const last =
      typeof rows.at(-1)?.chain === "string" ? (rows.at(-1)!.chain as string) : undefined;
    return (
      runRowMismatch(
        runId,
        rows.length,
        { events: Number(run?.next_seq ?? 0), head: run?.head },
        last,
      ) ?? verifiedLog(runId, rows.length, last, chain.key)
    );
  };

  const list = async (filter: ListFilter = {}): Promise<RunSummary[]> => {
    if (filter === null || typeof filter !== "object")
      throw new InvalidArgumentError(
        "[checkpoint] postgresEventStore.list(filter): filter must be an object",
      );
    if (filter.limit !== undefined && (!Number.isInteger(filter.limit) || filter.limit < 0)) {
      throw new InvalidArgumentError(
        `[checkpoint] postgresEventStore.list: limit must be a non-negative integer, got ${JSON.stringify(filter.limit)}`,
      );
    }
    validateFilter(filter);
    const pool = await ready();
    const conditions = ["summary IS NOT NULL"];
    const values: unknown[] = [];
    if (filter.status !== undefined) {
      values.push(typeof filter.status === "string" ? [filter.status] : [...filter.status]);
      conditions.push(`status = ANY($${values.length}::text[])`);
    }
    if (filter.agentId !== undefined) {
      values.push(filter.agentId);
      conditions.push(`agent_id = $${values.length}`);
    }
    if (filter.updatedAfter !== undefined) {
      values.push(filter.updatedAfter);
      conditions.push(`updated_at > $${values.length}`);
    }
    const oldest = filter.order === "oldest";
    if (filter.after !== undefined) {
      values.push(filter.after.updatedAt, filter.after.runId);
      conditions.push(
        `(updated_at ${oldest ? ">" : "<"} $${values.length - 1} OR (updated_at = $${values.length - 1} AND run_id COLLATE "C" > $${values.length}))`,
      );
    }
    let limit = "";
    if (filter.limit !== undefined) {
      values.push(filter.limit);
      limit = `LIMIT $${values.length}`;
    }
    // ORDER BY run_id COLLATE "C" matches JavaScript's code-unit order for ties.
    const { rows } = await pool.query(
      `SELECT summary FROM ${s}.runs WHERE ${conditions.join(" AND ")} ORDER BY updated_at ${oldest ? "ASC" : "DESC"}, run_id COLLATE "C" ${limit}`,
      values,
    );
    return rows.map((row) => JSON.parse(row.summary as string) as RunSummary);
  };

  const claim = async (runId: string): Promise<number> => {
    checkRunId(runId, "claim");
    const pool = await ready();
    const { rows } = await pool.query({
      name: names.claim,
      text: `INSERT INTO ${s}.runs (run_id, epoch) VALUES ($1, 1) ON CONFLICT (run_id) DO UPDATE SET epoch = ${s}.runs.epoch + 1 RETURNING epoch`,
      values: [runId],
    });
    return Number(rows[0]!.epoch);
  };

  const claimAndRead = async (runId: string): Promise<{ epoch: number; events: StoredEvent[] }> => {
    checkRunId(runId, "claimAndRead");
    const pool = await ready();
    // The claim returns the row's latest version (it waits for an append holding the row
    // lock), but the join reads the events as of the statement's start: if an append committed
    // in between, the counts differ and the log is read again, after the claim.
    const { rows } = await pool.query({
      name: names.claimRead,
      text: `WITH claimed AS (
         INSERT INTO ${s}.runs (run_id, epoch) VALUES ($1, 1)
         ON CONFLICT (run_id) DO UPDATE SET epoch = ${s}.runs.epoch + 1
         RETURNING epoch, next_seq
       )
       SELECT claimed.epoch, claimed.next_seq, e.seq, e.body, e.chain
       FROM claimed LEFT JOIN ${s}.events e ON e.run_id = $1
       ORDER BY e.seq`,
      values: [runId],
    });
    const first = rows[0]!;
    const epoch = Number(first.epoch);
    const nextSeq = Number(first.next_seq);
    const eventRows = first.seq === null ? [] : rows;
    if (eventRows.length === nextSeq) return { epoch, events: parseRows(runId, eventRows) };
    return { epoch, events: await read(runId) };
  };

  const epochOf = async (runId: string): Promise<number> => {
    checkRunId(runId, "epochOf");
    const pool = await ready();
    const { rows } = await pool.query(`SELECT epoch FROM ${s}.runs WHERE run_id = $1`, [runId]);
    return Number(rows[0]?.epoch ?? 0);
  };

  const store: PostgresEventStore = {
    name: "postgres",
    schema,
    pool: ready,
    async migrate() {
      await ready();
    },
    append,
    read,
    list,
    claim,
    claimAndRead,
    epochOf,
    verify,
    readBatches,
    fenced(runId, epoch) {
      checkRunId(runId, "fenced");
      if (!Number.isInteger(epoch) || epoch < 1) {
        throw new InvalidArgumentError(
          `[checkpoint] postgresEventStore.fenced(${runId}, epoch): epoch must be a positive integer returned by claim(runId), got ${JSON.stringify(epoch)}`,
        );
      }
      return {
        name: "postgres",
        runId,
        epoch,
        append(target, events, appendOptions) {
          if (target !== runId) {
            return Promise.reject(
              new InvalidArgumentError(
                `[checkpoint] this store view is fenced to run ${runId} (epoch ${epoch}); it cannot append to run ${target}`,
              ),
            );
          }
          return append(target, events, { expectedSeq: appendOptions?.expectedSeq, epoch });
        },
        read,
        readBatches,
        list,
        async confirmOwner(target) {
          if (target !== runId)
            throw new InvalidArgumentError(
              `[checkpoint] this store view is fenced to run ${runId} (epoch ${epoch}); it cannot vouch for run ${target}`,
            );
          const currentEpoch = await epochOf(runId);
          if (currentEpoch !== epoch) {
            const next = summaries.get(runId)?.nextSeq ?? 0;
            const error = new FencedError(runId, epoch, currentEpoch, next, next);
            error.message = `[checkpoint] run ${runId}: a tool was about to run, but this writer holds epoch ${epoch} and the run was claimed again (epoch ${currentEpoch}); another worker owns it now, so this one executes nothing more`;
            throw error;
          }
        },
        // The view shares the parent's pool: closing it must not close the parent.
        async close() {},
      };
    },
    close,
  };
  return store;
}

/** The text an event's chain link covers: its stored body with its seq in front, as in a JSONL line. */
function chainText(seq: number, body: string): string {
  return `{"seq":${seq},${body.slice(1)}`;
}

function checkRunId(runId: unknown, method: string): asserts runId is string {
  assertRunId(runId, `postgresEventStore.${method}`);
}
