import { createServer } from "node:http";
import { pathToFileURL } from "node:url";
import {
  approveQueuedRun,
  postgresEventStore,
  postgresFreezeStore,
  submitRun,
} from "@loopguard/checkpoint";
import type { Agent, ApprovalAnswer, EventStore, FreezeStore } from "@loopguard/core";
import { loadPackages, supportDefences } from "@loopguard/evals";
import { fileFreezeStore } from "@loopguard/policy/node";
import { osUser } from "./cli-context.js";
import { type DemoPaths, demoAgent } from "./demo-agent.js";
import { safeUrl, withDatabase } from "./postgres-connection.js";
import type { WebBackend } from "./web/backend.js";
import { localBackend } from "./web/local-backend.js";
import { createWebHandler } from "./web/web-server.js";
import { createTables, supportDeskAgents } from "./worker.js";

/** Options of `loopguard serve`. */
export interface ServeOptions {
  port: number;
  /** The shared secret callers send in `x-loopguard-secret`; also signs in at `/login`. */
  secret: string;
  /** Printed after the sign-in URL (what `serve` chose for you, such as a generated secret). */
  notice?: string;
  paths: DemoPaths;
  out: (line: string) => void;
  /** Default 127.0.0.1. Anything else is reachable from the network: put TLS in front. */
  host?: string;
  /** The name answers are recorded under. Default: the OS user. */
  user?: string;
  /** A header a trusted reverse proxy sets to the signed-in person's name. */
  trustProxyHeader?: string;
  /** More `host:port` names browsers may use (behind a reverse proxy). */
  allowedHosts?: readonly string[];
  /**
   * A module whose runs this server answers and resumes: it exports `agent` (or a default)
   * that is an agent made with `createAgent`, or a function `({ runId }) => agent`; optionally
   * `redact` (what the pages show goes through it) and `freezeStore`. Default: the demo agent.
   */
  agentModule?: string;
  /** How often the live feed looks for changes. Default 1 000 ms. */
  livePollMs?: number;
  /**
   * Serve the worker fleet's runs from PostgreSQL instead of the runs directory: answers are
   * recorded with `approveQueuedRun` and a worker (`loopguard worker`) resumes the run.
   */
  databaseUrl?: string;
  /** The workers' schema. Default `loopguard`. */
  schema?: string;
}

/**
 * Serves the web inbox, the run browser and the fleet's kill switch (see `web/web-server.ts`),
 * with the JSON webhook `POST /runs/:id/approve` of earlier releases. Prints the one-time
 * sign-in URL on its first line. Resolves when the server closes (SIGINT or SIGTERM).
 */
export async function serve(options: ServeOptions): Promise<void> {
  const host = options.host ?? "127.0.0.1";
  if (options.databaseUrl && options.agentModule)
    throw new Error(
      "[loopguard] serve: --database-url serves the workers' support-desk agent; --agent is for a runs directory",
    );
  const backend = options.databaseUrl
    ? await postgresBackend(options.databaseUrl, options.schema ?? "loopguard")
    : options.agentModule
      ? await moduleBackend(options.agentModule, options)
      : await demoBackend(options);
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, host, () => resolve());
  });
  const { port } = server.address() as { port: number };
  const handler = createWebHandler({
    backend,
    secret: options.secret,
    user: options.user ?? osUser(),
    host,
    port,
    ...(options.trustProxyHeader ? { trustProxyHeader: options.trustProxyHeader } : {}),
    ...(options.allowedHosts ? { allowedHosts: options.allowedHosts } : {}),
    ...(options.livePollMs ? { livePollMs: options.livePollMs } : {}),
    onError: (error, where) =>
      options.out(`[serve] ${where}: ${error instanceof Error ? error.message : String(error)}`),
  });
  await handler.ready;
  server.on("request", (request, response) => {
    handler.handle(request, response).catch((error) => {
      options.out(`[serve] ${error instanceof Error ? error.message : String(error)}`);
      if (!response.headersSent) response.writeHead(500);
      response.end();
    });
  });
  options.out(handler.signInUrl);
  if (options.notice) options.out(options.notice);
  options.out(
    `loopguard serve: the approval inbox is at the URL above (it signs you in once); runs from ${backend.where}; webhook POST /runs/:id/approve with x-loopguard-secret. Stop with Ctrl-C.`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => {
      handler.close();
      server.close(() => resolve());
      server.closeAllConnections?.();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    server.on("close", () => resolve());
  });
  await backend.close();
}

/** The demo's runs directory, answered and resumed in this process by the demo agent. */
async function demoBackend(options: ServeOptions): Promise<WebBackend> {
  const demo = await demoAgent({ paths: options.paths });
  const redact = supportDefences(demo.packages).redact;
  const agentFor = async (runId: string) =>
    (await demoAgent({ paths: options.paths, runId })).agent;
  return localBackend({
    where: options.paths.runs,
    watchDir: options.paths.runs,
    store: demo.store,
    freezeStore: fileFreezeStore({ path: options.paths.freeze }),
    redact,
    policyDigest: demo.agent.policyDigest,
    agentFor,
    out: options.out,
  });
}

/**
 * The worker fleet's runs in PostgreSQL. An answer claims the run (fencing any worker still on
 * it), is recorded by the workers' own agent, and re-queues the run for a worker to finish.
 */
async function postgresBackend(url: string, schema: string): Promise<WebBackend> {
  const store = postgresEventStore({ connectionString: url, schema });
  const packages = await loadPackages();
  const pool = await withDatabase(url, async () => {
    const opened = await store.pool();
    await store.migrate();
    await createTables(opened, schema);
    return opened;
  });
  const makeAgent = supportDeskAgents({ pool, schema, stepDelayMs: 0, packages });
  const factory = (view: EventStore, slice: { runId: string; epoch: number }) =>
    makeAgent(view, slice.runId, slice.epoch);
  const policyDigest = (await makeAgent(store, "run_0000000000000000", 0)).policyDigest;
  const requeue = async (runId: string) => {
    const start = (await store.read(runId)).find((event) => event.type === "run-start");
    if (!start || start.type !== "run-start") throw new Error(`run ${runId} not found`);
    await submitRun({ store, schema }, start.task, { runId });
  };
  return {
    kind: "postgres",
    where: `PostgreSQL ${safeUrl(url)} (schema ${schema})`,
    store,
    freezeStore: postgresFreezeStore({ pool, schema }),
    policyDigest,
    redact: supportDefences(packages).redact,
    async answer(runId: string, answer: ApprovalAnswer) {
      const result = await approveQueuedRun({ store, schema }, runId, answer, { agent: factory });
      return { status: result.status === "awaiting_approval" ? result.status : "queued" };
    },
    async resume(runId: string) {
      await requeue(runId);
      return { status: "queued" };
    },
    async halt(runId: string, reason: string, by: string) {
      const epoch = await store.claim(runId);
      const events = await store.read(runId);
      if (events.length === 0) throw new Error(`run ${runId} not found`);
      if (events.some((event) => event.type === "run-end"))
        throw new Error(`run ${runId} has already ended`);
      // Claiming fenced off any worker on the run; the halt is written under the new claim.
      await store.fenced(runId, epoch).append(
        runId,
        [
          {
            type: "run-halt",
            reason: `operator: ${reason}`,
            source: `web:${by}`,
            at: Date.now(),
          },
        ],
        { expectedSeq: events.length },
      );
      await requeue(runId);
      return { status: "queued" };
    },
    close: () => store.close(),
  };
}

/** A host's own agent module (`serve --agent ./agent.mjs`). */
async function moduleBackend(specifier: string, options: ServeOptions): Promise<WebBackend> {
  const url = /^[a-z]+:/i.test(specifier) ? specifier : pathToFileURL(specifier).href;
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(
      `[loopguard] serve --agent ${specifier}: cannot load the module (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  const exported = loaded.agent ?? loaded.default;
  const isAgent = (value: unknown): value is Agent =>
    typeof value === "object" && value !== null && typeof (value as Agent).approve === "function";
  let agentFor: (runId: string) => Promise<Agent>;
  if (isAgent(exported)) agentFor = async () => exported;
  else if (typeof exported === "function")
    agentFor = async (runId) => {
      const agent = await (exported as (context: { runId: string }) => unknown)({ runId });
      if (!isAgent(agent))
        throw new Error(
          `[loopguard] serve --agent ${specifier}: its agent function must return an agent made with createAgent`,
        );
      return agent;
    };
  else
    throw new Error(
      `[loopguard] serve --agent ${specifier}: the module must export \`agent\` (or a default): an agent made with createAgent, or a function ({ runId }) => agent`,
    );
  const first = await agentFor("");
  const redact =
    typeof loaded.redact === "function"
      ? (loaded.redact as (value: unknown) => unknown)
      : supportDefences((await demoAgent({ paths: options.paths })).packages).redact;
  const freezeStore =
    (loaded.freezeStore as FreezeStore | undefined) ??
    fileFreezeStore({ path: options.paths.freeze });
  return localBackend({
    where: `${first.store.name} store of ${specifier}`,
    store: first.store,
    freezeStore,
    redact,
    policyDigest: first.policyDigest,
    agentFor,
    out: options.out,
  });
}
