import { CorruptLogError, type RunSummary, type StoredEvent } from "@loopguard/core";
import type { D1Database } from "./d1-database.js";

/** One row of `loopguard_events` as read. */
export interface EventRow {
  seq: number;
  part: number;
  body: string;
}

/** The log's length (next seq) and the run's stored summary, in one query. */
export async function lengthAndSummary(
  database: D1Database,
  runId: string,
): Promise<{ length: number; summary: RunSummary | undefined }> {
  const row = await database
    .prepare(
      "SELECT (SELECT COALESCE(MAX(seq) + 1, 0) FROM loopguard_events WHERE run_id = ?1) AS next, (SELECT summary FROM loopguard_runs WHERE run_id = ?1) AS summary",
    )
    .bind(runId)
    .first<{ next: number; summary: string | null }>();
  return {
    length: row?.next ?? 0,
    summary: row?.summary ? (JSON.parse(row.summary) as RunSummary) : undefined,
  };
}

/** Events `fromSeq` (inclusive) to `toSeq` (exclusive) of a run, parts joined and checked. */
export async function readRows(
  database: D1Database,
  runId: string,
  fromSeq: number,
  toSeq: number,
): Promise<StoredEvent[]> {
  const { results = [] } = await database
    .prepare(
      "SELECT seq, part, body FROM loopguard_events WHERE run_id = ? AND seq >= ? AND seq < ? ORDER BY seq, part",
    )
    .bind(runId, fromSeq, toSeq)
    .all<EventRow>();
  return assemble(runId, results, fromSeq);
}

/** Joins each event's parts and checks every seq and JSON; a damaged row is a CorruptLogError. */
function assemble(runId: string, rows: EventRow[], fromSeq: number): StoredEvent[] {
  const events: StoredEvent[] = [];
  for (let index = 0; index < rows.length; ) {
    const seq = rows[index]!.seq;
    const where = `run ${runId} event ${seq} (table loopguard_events)`;
    if (seq !== fromSeq + events.length)
      throw new CorruptLogError(
        `[cloudflare] ${where}: expected seq ${fromSeq + events.length}, the log has a gap`,
      );
    let body = "";
    for (let part = 0; index < rows.length && rows[index]!.seq === seq; part++, index++) {
      if (rows[index]!.part !== part)
        throw new CorruptLogError(`[cloudflare] ${where}: part ${part} is missing`);
      body += rows[index]!.body;
    }
    let event: StoredEvent;
    try {
      event = JSON.parse(body) as StoredEvent;
    } catch (error) {
      throw new CorruptLogError(
        `[cloudflare] ${where} is not valid JSON; restore the row from a backup`,
        {
          cause: error,
        },
      );
    }
    if (event?.seq !== seq || typeof event.type !== "string")
      throw new CorruptLogError(
        `[cloudflare] ${where}: the stored event does not match its row (seq ${String(event?.seq)})`,
      );
    events.push(event);
  }
  return events;
}
