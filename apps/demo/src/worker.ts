import {
  createWorker,
  type PgPool,
  postgresFreezeStore,
  postgresLimitStore,
} from "@loopguard/checkpoint";
import {
  type Agent,
  createAgent,
  type EventStore,
  type Gate,
  type Model,
  type ModelRequest,
  type RunBudget,
  type Tool,
  type ToolContext,
} from "@loopguard/core";
import { sleep } from "@loopguard/core/plugin";
import { gullibleModel, loadPackages, supportDefences, supportDesk } from "@loopguard/evals";
import { createKeyring } from "@loopguard/redact";
import { withDatabase } from "./postgres-connection.js";
import {
  createSubjectKeysTable,
  postgresRunVault,
  postgresSubjectKeyStore,
  vaultKeys,
} from "./run-vault.js";

/** The agents this worker can run, by the name `loopguard submit --agent` takes. */
export const workerAgents = {
  "support-desk": "Acme Shop's support agent (the demo's scripted model, offline)",
} as const;

/** Options of `loopguard worker`. */
export interface RunWorkerOptions {
  connectionString: string;
  concurrency: number;
  /** The schema of the event store, the vault and the demo's ledger. Default `loopguard`. */
  schema?: string;
  /** The job lease (pg-boss `expireInSeconds`), in ms. Default 30 000. */
  leaseMs?: number;
  /** How long one job advances a run. Default 5 000 (at most half the lease). */
  sliceMs?: number;
  /** How often an idle worker polls. Default 2 000. */
  pollingIntervalMs?: number;
  /** Latency of each model step in ms, as a real model has. Default 0. */
  stepDelayMs?: number;
  /** At most this many runs of one tenant advanced at once across the fleet. */
  tenantConcurrency?: number;
  /** Each tenant's USD per calendar day (UTC), on the PostgreSQL limit store (`tenantBudget`). */
  tenantUsdPerDay?: number;
  /** Each tenant's runs per calendar day (UTC). */
  tenantRunsPerDay?: number;
  out: (line: string) => void;
}

/**
 * Runs a PostgreSQL worker that advances queued support-desk runs (submitted with
 * `submitRun`) until SIGINT or SIGTERM, then stops taking jobs and waits for slices in flight.
 *
 * Everything a run needs lives in the database, so any worker can take over any run: the event
 * log, the run's PII vault (`<schema>.vault_entries`, written before any event that carries
 * its tokens), the fleet freeze (`postgresFreezeStore`, read by the kill switch) and the
 * demo's outside world (`<schema>.demo_ledger`: refunds and emails keyed by idempotency key,
 * as a payments API would keep them).
 */
export async function runWorker(options: RunWorkerOptions): Promise<number> {
  const schema = options.schema ?? "loopguard";
  const packages = await loadPackages();
  const worker = createWorker({
    connectionString: options.connectionString,
    schema,
    concurrency: options.concurrency,
    ...(options.tenantConcurrency !== undefined
      ? { tenantConcurrency: options.tenantConcurrency }
      : {}),
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
    ...(options.sliceMs !== undefined ? { sliceMs: options.sliceMs } : {}),
    ...(options.pollingIntervalMs !== undefined
      ? { pollingIntervalMs: options.pollingIntervalMs }
      : {}),
    // Expired leases are looked for a few times per lease (pg-boss's floor is 1 s).
    maintenanceIntervalMs: Math.min(
      5_000,
      Math.max(1_000, Math.floor((options.leaseMs ?? 30_000) / 3_000) * 1_000),
    ),
    agent: (store, slice) => {
      options.out(`slice ${slice.runId}: claimed (epoch ${slice.epoch})`);
      return makeAgent(store, slice.runId, slice.epoch);
    },
    onSlice: (report) =>
      options.out(
        `slice ${report.runId}: ${report.outcome}${report.status ? ` (${report.status})` : ""}`,
      ),
    onError: (error, where) =>
      options.out(`[worker] ${where}: ${error instanceof Error ? error.message : String(error)}`),
  });
  const pool = await withDatabase(options.connectionString, async () => {
    const opened = await worker.store.pool();
    await worker.store.migrate();
    await createTables(opened, schema);
    return opened;
  });
  // Tenant budgets on the fleet's limit store (what `loopguard limits` shows).
  const budgets: RunBudget[] = [];
  if (options.tenantUsdPerDay !== undefined || options.tenantRunsPerDay !== undefined) {
    const policyModule = packages.modules.policy;
    if (!policyModule)
      throw new Error("[loopguard] worker: tenant budgets need @loopguard/policy in this build");
    budgets.push(
      policyModule.tenantBudget({
        store: postgresLimitStore({ pool, schema }),
        perDay: {
          ...(options.tenantUsdPerDay !== undefined ? { maxUsd: options.tenantUsdPerDay } : {}),
          ...(options.tenantRunsPerDay !== undefined ? { maxRuns: options.tenantRunsPerDay } : {}),
        },
      }),
    );
  }
  const makeAgent = supportDeskAgents({
    pool,
    schema,
    stepDelayMs: options.stepDelayMs ?? 0,
    packages,
    budgets,
  });

  await withDatabase(options.connectionString, () => worker.start());
  options.out(
    `loopguard worker ${worker.id}: ${options.concurrency} slice(s) at once on schema ${schema}; stop with Ctrl-C (SIGTERM)`,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  options.out("stopping: waiting for slices in flight");
  await worker.stop();
  return 0;
}

/**
 * The support desk's agent over PostgreSQL, as the workers run it: the run's vault lives in
 * `<schema>.vault_entries` (written before any event that carries its tokens), the kill switch
 * reads `postgresFreezeStore`, and refunds and emails land in `<schema>.demo_ledger` keyed by
 * idempotency key. `serve --database-url` answers approvals with the same agent. Call
 * `prepareWorkerTables` first.
 */
export function supportDeskAgents(options: {
  pool: PgPool;
  schema: string;
  stepDelayMs: number;
  packages: Awaited<ReturnType<typeof loadPackages>>;
  /** Run budgets (tenant budgets) of every run. */
  budgets?: readonly RunBudget[];
}): (store: EventStore, runId: string, epoch: number) => Promise<Agent> {
  const { pool, schema, stepDelayMs, packages } = options;
  const s = `"${schema}"`;
  const defences = supportDefences(packages);

  const desk = supportDesk({ poisoned: true });
  const tools = desk.tools.map((tool) =>
    tool.name === "issue_refund" || tool.name === "send_email" ? recorded(tool, pool, s) : tool,
  );
  const gates: Gate[] = [...defences.gates];
  const policyModule = packages.modules.policy;
  if (policyModule)
    gates.unshift(
      policyModule.killSwitch({ store: postgresFreezeStore({ pool, schema }) }) as Gate,
    );
  const model = orderModel(stepDelayMs);
  // Vault values are sealed per subject; the master key comes from LOOPGUARD_VAULT_KEY (set it
  // on every worker), else from .loopguard/vault/master.key beside the process (one machine).
  const keyring = createKeyring({
    keys: vaultKeys(".loopguard/vault"),
    store: postgresSubjectKeyStore(pool, schema),
  });

  /** The agent of one slice: the run's vault is loaded from, and saved to, PostgreSQL. */
  return async function makeAgent(store: EventStore, runId: string, epoch: number): Promise<Agent> {
    const { rows } = await pool.query(
      `SELECT entry FROM ${s}.vault_entries WHERE run_id = $1 ORDER BY seq`,
      [runId],
    );
    let saved = rows.length;
    const pending: string[] = [];
    // Sealed lines in, sealed lines out: the table never holds a value in clear.
    const vault = await postgresRunVault({
      keyring,
      runId,
      lines: rows.map((row) => row.entry as string),
      onSealed: (line) => pending.push(line),
    });
    // New vault entries are written before the append that may carry their tokens, fenced by
    // the slice's claim, so no durable event ever holds a token the vault cannot reveal.
    const view: EventStore = {
      name: store.name,
      async append(target, events, appendOptions) {
        if (pending.length > 0) {
          const batch = pending.splice(0);
          const { rowCount } = await pool.query(
            `WITH fence AS (SELECT 1 FROM ${s}.runs WHERE run_id = $1 AND epoch = $2 FOR SHARE)
             INSERT INTO ${s}.vault_entries (run_id, seq, entry, epoch)
             SELECT $1, input.seq, input.entry, $2
             FROM unnest($3::integer[], $4::text[]) AS input(seq, entry)
             WHERE EXISTS (SELECT 1 FROM fence)`,
            [runId, epoch, batch.map((_, index) => saved + index), batch],
          );
          // No rows: another worker claimed the run; the append below is refused as fenced.
          if (rowCount === batch.length) saved += batch.length;
        }
        return store.append(target, events, appendOptions);
      },
      read: (target) => store.read(target),
      list: (filter) => store.list(filter),
    };
    return createAgent({
      model,
      tools,
      system: desk.system,
      gates,
      ...(defences.scanner ? { scanner: defences.scanner } : {}),
      ...(defences.envelope ? { envelope: defences.envelope } : {}),
      redact: defences.redact,
      vault,
      store: view,
      budget: { maxUsd: 0.5, maxSteps: 15, wallClockMs: 120_000 },
      ...(options.budgets && options.budgets.length > 0 ? { budgets: options.budgets } : {}),
      approval: { durable: true },
      retry: { baseDelayMs: 50 },
      agentId: "support-desk",
    });
  };
}

/** Creates the vault and ledger tables once, however many workers start at once. */
export async function createTables(pool: PgPool, schema: string): Promise<void> {
  const s = `"${schema}"`;
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
      `loopguard:demo-worker:${schema}`,
    ]);
    // The vault holds sealed values only (AES-256-GCM under per-subject data keys in
    // subject_keys): deleting a subject's key forgets that customer in every run.
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.vault_entries (run_id text NOT NULL, seq integer NOT NULL, entry text NOT NULL, epoch bigint NOT NULL, PRIMARY KEY (run_id, seq))`,
    );
    await createSubjectKeysTable(client, schema);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.demo_ledger (idempotency_key text PRIMARY KEY, kind text NOT NULL, run_id text NOT NULL, payload text NOT NULL, at bigint NOT NULL)`,
    );
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/**
 * A side-effect tool whose effect is recorded in `<schema>.demo_ledger` under its idempotency
 * key, as a payments or mail API shared by every worker would: the same key twice does
 * nothing the second time, whichever worker sends it.
 */
// biome-ignore lint/suspicious/noExplicitAny: the support desk's tools mix argument types, as core's AgentOptions.tools does
function recorded(tool: Tool<any, any>, pool: PgPool, s: string): Tool<any, any> {
  const kind = tool.name === "issue_refund" ? "refund" : "email";
  return {
    ...tool,
    run: async (args: Record<string, unknown>, context: ToolContext) => {
      // The tool checks its arguments (and throws without an effect) before the effect lands.
      const result = (await tool.run(args, context)) as Record<string, unknown>;
      const { rowCount } = await pool.query(
        `INSERT INTO ${s}.demo_ledger (idempotency_key, kind, run_id, payload, at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (idempotency_key) DO NOTHING`,
        [context.idempotencyKey, kind, context.runId, JSON.stringify(args), Date.now()],
      );
      if (rowCount === 0 && kind === "refund") return { ...result, status: "already_refunded" };
      return result;
    },
  };
}

/** The gullible support model, for the order the task names (default A1001), with latency. */
function orderModel(stepDelayMs: number): Model {
  const models = new Map<string, Model>();
  const of = (orderId: string) => {
    let model = models.get(orderId);
    if (!model) {
      model = gullibleModel({ orderId });
      models.set(orderId, model);
    }
    return model;
  };
  const base = of("A1001");
  return {
    name: base.name,
    model: base.model,
    create: async (request, options) => {
      if (stepDelayMs > 0) await sleep(stepDelayMs, options.signal);
      return of(orderOf(request)).create(request, options);
    },
  };
}

/** The order id the task (the first user message) names. */
function orderOf(request: ModelRequest): string {
  const first = request.messages[0];
  const text =
    typeof first?.content === "string"
      ? first.content
      : (first?.content ?? []).map((block) => (block.type === "text" ? block.text : "")).join(" ");
  return /\b([A-Z]\d{4})\b/.exec(text)?.[1] ?? "A1001";
}
