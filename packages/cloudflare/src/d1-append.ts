import {
  AppendConflictError,
  type AppendOptions,
  type AppendResult,
  InvalidArgumentError,
  type StoredEvent,
  type StoredEventInput,
} from "@loopguard/core";
import { summarize } from "@loopguard/core/plugin";
import type { D1Database, D1PreparedStatement } from "./d1-database.js";
import { lengthAndSummary } from "./d1-log.js";

/** How events become rows: characters per row, rows per INSERT. */
export interface RowLayout {
  partChars: number;
  rowsPerStatement: number;
}

/** The INSERT statements for events: each event's JSON split into parts, rows grouped. */
export function insertStatements(
  database: D1Database,
  layout: RowLayout,
  runId: string,
  events: StoredEvent[],
): D1PreparedStatement[] {
  const { partChars, rowsPerStatement } = layout;
  const rows: Array<[number, number, number, string, string]> = [];
  for (const event of events) {
    const body = JSON.stringify(event);
    for (let part = 0, start = 0; start < body.length || part === 0; part++, start += partChars)
      rows.push([event.seq, part, event.at, event.type, body.slice(start, start + partChars)]);
  }
  const statements: D1PreparedStatement[] = [];
  for (let start = 0; start < rows.length; ) {
    // A long part goes alone; short rows share a statement.
    let end = start + 1;
    let chars = rows[start]![4].length;
    while (
      end < rows.length &&
      end - start < rowsPerStatement &&
      chars + rows[end]![4].length <= partChars
    ) {
      chars += rows[end]![4].length;
      end++;
    }
    const slice = rows.slice(start, end);
    statements.push(
      database
        .prepare(
          `INSERT INTO loopguard_events (run_id, seq, part, at, type, body) VALUES ${slice.map(() => "(?, ?, ?, ?, ?, ?)").join(", ")}`,
        )
        .bind(...slice.flatMap((row) => [runId, ...row])),
    );
    start = end;
  }
  return statements;
}

/**
 * One append, as one D1 batch (one transaction): the fence read first, then the rows and the
 * run's new summary; a primary-key collision (another writer first) is `AppendConflictError`.
 */
export async function appendEvents(
  database: D1Database,
  layout: RowLayout,
  runId: string,
  events: readonly StoredEventInput[],
  appendOptions: AppendOptions,
  ready: () => Promise<void>,
): Promise<AppendResult> {
  if (!Array.isArray(events))
    throw new InvalidArgumentError(
      "[cloudflare] append(runId, events): events must be an array of events",
    );
  const expectedSeq = appendOptions?.expectedSeq;
  if (!Number.isSafeInteger(expectedSeq) || expectedSeq < 0)
    throw new InvalidArgumentError(
      `[cloudflare] append: expectedSeq must be a non-negative integer (the log's length), got ${String(expectedSeq)}`,
    );
  await ready();
  const { length, summary } = await lengthAndSummary(database, runId);
  if (length !== expectedSeq) throw new AppendConflictError(runId, expectedSeq, length);
  if (events.length === 0) return { nextSeq: length };
  const stored = events.map(
    (event: StoredEventInput, index) =>
      ({ ...structuredClone(event), seq: length + index }) as StoredEvent,
  );
  const next = summarize(summary, runId, stored);
  const statements = insertStatements(database, layout, runId, stored);
  statements.push(
    database
      .prepare(
        "INSERT INTO loopguard_runs (run_id, agent_id, status, updated_at, summary) VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET agent_id = excluded.agent_id, status = excluded.status, updated_at = excluded.updated_at, summary = excluded.summary",
      )
      .bind(runId, next.agentId ?? null, next.status, next.updatedAt, JSON.stringify(next)),
  );
  try {
    await database.batch(statements);
  } catch (error) {
    // Another writer committed at this length first: the primary key refused our rows and
    // D1 rolled the whole batch back.
    if (/UNIQUE constraint failed|PRIMARY KEY/i.test(String((error as Error)?.message ?? error))) {
      const now = await lengthAndSummary(database, runId);
      throw new AppendConflictError(runId, expectedSeq, now.length);
    }
    throw error;
  }
  return { nextSeq: length + stored.length };
}
