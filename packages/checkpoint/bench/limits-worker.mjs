// One worker process of the limits bench: compiled @loopguard/checkpoint (dist), an agent that
// answers at once (a trivial run), and with LIMITS=1 the fleet limits on: tenantBudget on the
// PostgreSQL limit store (reserve at start, reserve and settle per step) and tenantConcurrency.
// SIGTERM stops it.
import { createAgent } from "@loopguard/core";
import { tenantBudget } from "../../policy/dist/index.js";

// LG_DIST: another build of this package (e.g. an older commit built aside), to compare.
const dist = process.env.LG_DIST ?? new URL("../dist", import.meta.url).pathname;
const { postgresEventStore } = await import(`${dist}/postgres-event-store.js`);
const { postgresLimitStore } = await import(`${dist}/postgres-limit-store.js`);
const { createWorker } = await import(`${dist}/worker.js`);

import { work, workModel } from "../test/pg/fixtures/work-model.mjs";

const env = process.env;
const limits = env.LIMITS === "1";
const print = (line) => process.stdout.write(`${JSON.stringify({ pid: process.pid, ...line })}\n`);
const store = postgresEventStore({
  connectionString: env.DATABASE_URL,
  schema: env.LG_SCHEMA,
  max: 10,
});
const limitStore = limits
  ? postgresLimitStore({ connectionString: env.DATABASE_URL, schema: env.LG_SCHEMA, max: 4 })
  : undefined;
const budgets = limitStore
  ? [tenantBudget({ store: limitStore, perDay: { maxUsd: 1_000_000, maxRuns: 1_000_000 } })]
  : [];
// STEPS=n: a run of n model steps (n - 1 tool calls), each model call taking STEP_MS.
const steps = Number(env.STEPS ?? 1);
const stepMs = Number(env.STEP_MS ?? 0);
const model = () => workModel(steps, { stepMs });
const worker = createWorker({
  store,
  agent: (view) => createAgent({ store: view, tools: [work], budgets, model: model() }),
  concurrency: Number(env.CONCURRENCY ?? 4),
  sliceMs: Number(env.SLICE_MS ?? 1000),
  leaseMs: 3000,
  pollingIntervalMs: 500,
  maintenanceIntervalMs: 1000,
  // TENANT_CONCURRENCY=0: tenant budgets only (to see what each limit costs).
  ...(limits && env.TENANT_CONCURRENCY !== "0"
    ? { tenantConcurrency: Number(env.TENANT_CONCURRENCY ?? 4) }
    : {}),
  onError: (error, where) =>
    print({ event: "error", where, message: String(error?.message ?? error) }),
});
await worker.start();
print({ event: "ready" });
process.on("SIGTERM", async () => {
  await worker.stop();
  await store.close();
  await limitStore?.close();
  process.exit(0);
});
