import type { Context, Hono } from "hono";
import { buildTraceTree, renderTraceHtml } from "../trace/index.js";
import { freezeState, readRun } from "./backend.js";
import { fail, sendHtml, sendJson } from "./http-replies.js";
import { type PageBoot, shellPage } from "./page.js";
import { type PendingApproval, runView } from "./run-view.js";
import type { WebContext, WebEnv } from "./web-context.js";

/**
 * The pages (signed in, GET only): the inbox, the fleet, the run list, a run, and a run's
 * trace viewer; `GET /runs` with the shared secret and no `accept: text/html` is the JSON list
 * scripts of earlier releases read. Any other path is a 404 page.
 */
export function pageRoutes(app: Hono<WebEnv>, context: WebContext): void {
  const { reads, backend, index } = context;
  app.get("/runs/:runId/trace.html", (c) => traceHtml(c, context));
  app.get("/", async (c) => {
    const version = await context.live.signature();
    return page(c, context, { view: "inbox", data: await reads.inbox(), version });
  });
  app.get("/fleet", async (c) => {
    const version = await context.live.signature();
    const data = { fleet: await freezeState(backend.freezeStore) };
    return page(c, context, { view: "fleet", data, version });
  });
  app.get("/runs", async (c) => {
    if (
      c.get("bySecret") &&
      !c.get("session") &&
      !(c.req.header("accept") ?? "").includes("text/html")
    ) {
      await index.refresh();
      return sendJson(c, 200, index.all());
    }
    const version = await context.live.signature();
    const query: Record<string, string> = {};
    for (const key of ["status", "agent"]) {
      const value = c.req.query(key);
      if (value) query[key] = value;
    }
    const data = await reads.runs((key) => c.req.query(key));
    return page(c, context, { view: "runs", data, version, query });
  });
  app.get("/runs/:runId", async (c) => {
    const runId = c.req.param("runId");
    const version = await context.live.signature();
    const data = await reads.run(runId);
    if (!data)
      return fail(c, 404, `run ${runId} not found: it may have been deleted, or the id is wrong`);
    return page(c, context, { view: "run", data, version });
  });
}

/**
 * One page: the shell with its view and data embedded. `version` is the state before the data
 * was read: a change landing while it is read is announced when the page's live feed connects.
 */
function page(
  c: Context<WebEnv>,
  context: WebContext,
  shown: { view: PageBoot["view"]; data: unknown; version: string; query?: Record<string, string> },
): Response {
  const { view, data, version, query } = shown;
  // Requests waiting on a person: one per approval, though a request asked inside a delegated
  // run parks every run above it too (those runs have no request of their own).
  const waiting =
    view === "inbox"
      ? (data as { pending: PendingApproval[] }).pending.filter(
          (item) => item.state === "pending" || item.state === "elsewhere",
        ).length
      : context.index
          .filter({ status: "awaiting_approval" })
          .filter((row) => row.parentRunId === undefined).length;
  const boot: PageBoot = {
    view,
    user: c.get("user"),
    csrf: c.get("session")?.csrf ?? "",
    where: context.backend.where,
    data,
    version,
    ...(query ? { query } : {}),
  };
  return sendHtml(c, 200, shellPage(boot, c.get("nonce"), waiting));
}

/** `GET /runs/:id/trace.html`: the run's trace viewer, redacted, framed by the run page. */
async function traceHtml(c: Context<WebEnv>, context: WebContext): Promise<Response> {
  const runId = c.req.param("runId") ?? "";
  const { backend } = context;
  const { events, error } = await readRun(backend.store, runId);
  if (error) return fail(c, 409, `run ${runId}'s log cannot be read: ${error}`);
  if (events.length === 0) return fail(c, 404, `run ${runId} not found`);
  // The run and every run it delegated to, each child nested under the call that started it;
  // the links open the other runs' pages (outside the frame).
  const tree = await buildTraceTree(
    async (id) => (id === runId ? events : (await readRun(backend.store, id)).events),
    runId,
    {
      redact: (value) => backend.redact(value),
      href: (id) => `/runs/${encodeURIComponent(id)}`,
    },
  );
  const { status } = runView(runId, events, { now: context.now() });
  return c.body(renderTraceHtml(tree.spans, { ...tree.meta, runId, status }), 200, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "content-security-policy":
      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'self'",
  });
}
