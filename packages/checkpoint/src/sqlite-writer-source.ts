/**
 * The source of the SQLite store's writer thread (a `worker_threads` Worker started with
 * `eval: true`, so it needs no file beside the compiled module and runs the same under a test
 * runner, a bundler or a child process). It opens its own connection to the database file
 * (WAL, `synchronous=FULL`) and commits each batch it is sent in one `BEGIN IMMEDIATE`
 * transaction, fsync included, off the main thread. It re-checks, inside the transaction,
 * what the main thread assumed when it built the rows: each append's `expectedSeq` against
 * the log's length (the fence), and the chain value of the log's last event against the one
 * the new rows link from. Outcomes per append: `ok` (the new length), `conflict` (the
 * length), or `stale` (the main thread must rebuild the rows). A failed transaction answers
 * `failed` for the whole batch (rolled back).
 */
export const sqliteWriterSource = `
"use strict";
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma("busy_timeout = " + workerData.busyTimeoutMs);
db.pragma("journal_mode = WAL");
db.pragma("synchronous = FULL");
const nextSeqOf = db.prepare("SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM loopguard_events WHERE run_id = ?");
const chainAt = db.prepare("SELECT chain FROM loopguard_events WHERE run_id = ? AND seq = ?");
const insert = db.prepare("INSERT INTO loopguard_events (run_id, seq, at, type, body, chain) VALUES (?, ?, ?, ?, ?, ?)");
const upsert = db.prepare("INSERT INTO loopguard_runs (run_id, agent_id, status, updated_at, summary, head) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET agent_id = excluded.agent_id, status = excluded.status, updated_at = excluded.updated_at, summary = excluded.summary, head = excluded.head");
const commitBatch = db.transaction((items) => {
  const lengths = new Map();
  return items.map((item) => {
    const length = lengths.has(item.runId) ? lengths.get(item.runId) : nextSeqOf.get(item.runId).next;
    lengths.set(item.runId, length);
    if (length !== item.expectedSeq) return { kind: "conflict", length };
    if (item.rows === undefined) return { kind: "stale" };
    if (item.rows.length === 0) return { kind: "ok", nextSeq: length };
    if (length > 0) {
      const previous = chainAt.get(item.runId, length - 1);
      if ((previous ? previous.chain : null) !== item.previousHead) return { kind: "stale" };
    }
    for (const row of item.rows) insert.run(item.runId, row.seq, row.at, row.type, row.body, row.chain);
    const run = item.run;
    upsert.run(item.runId, run.agentId, run.status, run.updatedAt, run.summary, run.head);
    lengths.set(item.runId, length + item.rows.length);
    return { kind: "ok", nextSeq: length + item.rows.length };
  });
});
parentPort.on("message", (message) => {
  if (message.type === "close") {
    db.close();
    parentPort.close();
    return;
  }
  try {
    parentPort.postMessage({ type: "committed", id: message.id, outcomes: commitBatch.immediate(JSON.parse(message.items)) });
  } catch (error) {
    parentPort.postMessage({
      type: "failed",
      id: message.id,
      error: { message: String((error && error.message) || error), code: error && error.code },
    });
  }
});
parentPort.postMessage({ type: "ready" });
`;
