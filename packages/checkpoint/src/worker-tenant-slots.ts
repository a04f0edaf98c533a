/**
 * Fleet-wide concurrency per tenant for the workers: at most K slices of one tenant's runs are
 * advanced at once across every worker of the database. A slot is a row held by one run and
 * one worker, taken in one round trip (a PL/pgSQL call that locks the tenant's row), released
 * when the slice ends, and expiring after the lease when its worker died or stalled, on the
 * database's clock (so workers' clocks do not matter). A job whose tenant is at its cap goes
 * back to the queue a little later; the worker takes another job meanwhile, so one tenant's
 * backlog never blocks another tenant.
 */
import { InvalidArgumentError } from "@loopguard/core";
import { connectGuarded, type PgPool } from "./postgres-pool.js";
import type { TenantSlotRequest } from "./postgres-store-types.js";
import type { QueueClient, QueueJob, ResolvedQueueOptions, RunJobData } from "./worker-queue.js";
import { jobSettings, queueDb, timeOf } from "./worker-queue.js";

/** The tenant slots of one schema. */
export interface TenantSlots {
  /**
   * What a slice asks for to take (or renew) run `runId`'s slot for `tenant`: the store's
   * `claimAndReadWithSlot` takes it in the statement that claims the run.
   */
  request(tenant: string, runId: string, holder: string): TenantSlotRequest;
  /** Gives the slot back (only the holder's), in a round trip of its own. */
  release(tenant: string, runId: string, holder: string): Promise<void>;
  /**
   * The same release as one SQL statement with its values written in as literals (escaped),
   * to run in the simple query that opens the slice's closing transaction: it commits with the
   * job's end, or rolls back with it (then `release` gives the slot back).
   */
  releaseStatement(tenant: string, runId: string, holder: string): string;
}

/** Checks `tenantConcurrency`: a positive whole number, or a function of the tenant. */
export function checkTenantConcurrency(
  value: unknown,
  where: string,
): ((tenant: string) => number) | undefined {
  if (value === undefined) return undefined;
  const check = (limit: unknown, tenant?: string): number => {
    if (!Number.isSafeInteger(limit) || (limit as number) < 1)
      throw new InvalidArgumentError(
        `[checkpoint] ${where}: tenantConcurrency${tenant === undefined ? "" : `(${JSON.stringify(tenant)})`} must be a whole number of at least 1, got ${String(limit)}`,
      );
    return limit as number;
  };
  if (typeof value === "function") return (tenant) => check(value(tenant), tenant);
  const limit = check(value);
  return () => limit;
}

/** Creates the slot tables and functions in `schema` (idempotent; under an advisory lock). */
export async function tenantSlots(
  pool: PgPool,
  schema: string,
  limitOf: (tenant: string) => number,
  ttlMs: number,
): Promise<TenantSlots> {
  const s = `"${schema}"`;
  // Already there (a worker joining a running fleet): no DDL, whose locks would queue behind
  // (and could deadlock with) the other workers' acquires.
  const { rows: found } = await pool.query("SELECT to_regprocedure($1) IS NOT NULL AS there", [
    `${s}.lg_tenant_slot_acquire(text,text,text,integer,bigint)`,
  ]);
  if (found[0]?.there === true) return slotsOn(pool, s, limitOf, ttlMs);
  const client = await connectGuarded(pool);
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
      `loopguard:tenant-slots:${schema}`,
    ]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.tenant_slot_locks (tenant text PRIMARY KEY)`,
    );
    await client.query(`CREATE TABLE IF NOT EXISTS ${s}.tenant_slots (
      tenant text NOT NULL,
      run_id text NOT NULL,
      holder text NOT NULL,
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (tenant, run_id)
    )`);
    await client.query(`CREATE OR REPLACE FUNCTION ${s}.lg_tenant_slot_acquire(
      p_tenant text, p_run text, p_holder text, p_limit integer, p_ttl_ms bigint
    ) RETURNS boolean LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO ${s}.tenant_slot_locks (tenant) VALUES (p_tenant)
        ON CONFLICT (tenant) DO UPDATE SET tenant = excluded.tenant;
      DELETE FROM ${s}.tenant_slots WHERE tenant = p_tenant AND expires_at <= clock_timestamp();
      UPDATE ${s}.tenant_slots
        SET holder = p_holder, expires_at = clock_timestamp() + p_ttl_ms * interval '1 millisecond'
        WHERE tenant = p_tenant AND run_id = p_run;
      IF FOUND THEN RETURN true; END IF;
      IF (SELECT count(*) FROM ${s}.tenant_slots WHERE tenant = p_tenant) >= p_limit THEN
        RETURN false;
      END IF;
      INSERT INTO ${s}.tenant_slots (tenant, run_id, holder, expires_at)
        VALUES (p_tenant, p_run, p_holder, clock_timestamp() + p_ttl_ms * interval '1 millisecond');
      RETURN true;
    END
    $fn$`);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    client.release(true);
    throw error;
  }
  client.release();
  return slotsOn(pool, s, limitOf, ttlMs);
}

/**
 * A SQL string literal, escaped as pg's `escapeLiteral` does (quotes doubled; backslashes
 * doubled in the `E''` form when there is one), so it reads back as `value` whatever
 * `standard_conforming_strings` is.
 */
export function escapeLiteral(value: string): string {
  let body = "";
  let backslash = false;
  for (const character of value) {
    if (character === "'") body += "''";
    else if (character === "\\") {
      body += "\\\\";
      backslash = true;
    } else body += character;
  }
  return backslash ? ` E'${body}'` : `'${body}'`;
}

function slotsOn(
  pool: PgPool,
  s: string,
  limitOf: (tenant: string) => number,
  ttlMs: number,
): TenantSlots {
  return {
    request: (tenant, _runId, holder) => ({ tenant, holder, limit: limitOf(tenant), ttlMs }),
    async release(tenant, runId, holder) {
      await pool.query(
        `DELETE FROM ${s}.tenant_slots WHERE tenant = $1 AND run_id = $2 AND holder = $3`,
        [tenant, runId, holder],
      );
    },
    releaseStatement: (tenant, runId, holder) =>
      `DELETE FROM ${s}.tenant_slots WHERE tenant = ${escapeLiteral(tenant)} AND run_id = ${escapeLiteral(runId)} AND holder = ${escapeLiteral(holder)}`,
  };
}

/**
 * Puts a job whose tenant is at its cap back on the queue: the job is completed and a copy sent
 * in one transaction (the `stately` policy keeps one queued job per run), so the run is never
 * lost and never queued twice. The copy starts after 1, 2, 4, then at most `maxDelaySeconds`
 * seconds as it keeps waiting (its `deferrals`), so a big backlog behind a cap costs the
 * database a few statements per run every few seconds, not every second.
 */
export async function deferJob(
  boss: QueueClient,
  pool: PgPool,
  settings: ResolvedQueueOptions,
  job: QueueJob,
  data: RunJobData,
  maxDelaySeconds: number,
): Promise<void> {
  const deferrals = (Number.isSafeInteger(data.deferrals) ? (data.deferrals as number) : 0) + 1;
  const delaySeconds = Math.min(maxDelaySeconds, 2 ** Math.min(deferrals - 1, 10));
  const client = await connectGuarded(pool);
  try {
    await client.query("BEGIN");
    const db = queueDb(client);
    await boss.complete(settings.queue, job.id, { outcome: "deferred" }, { db });
    await boss.send(
      settings.queue,
      // The copy keeps the time the run joined the queue: its wait counts from there.
      { ...data, deferrals, ...queuedAtOf(job, data) },
      {
        ...jobSettings(settings),
        singletonKey: data.runId,
        startAfter: delaySeconds,
        ...(typeof data.priority === "number" ? { priority: data.priority } : {}),
        db,
      },
    );
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    client.release(true);
    throw error;
  }
  client.release();
}

/** The `queuedAt` a deferred copy of a job carries: its run's, or the job's creation. */
function queuedAtOf(job: QueueJob, data: RunJobData): { queuedAt?: number } {
  if (typeof data.queuedAt === "number") return { queuedAt: data.queuedAt };
  const created = timeOf(job.createdOn);
  return created === undefined ? {} : { queuedAt: created };
}
