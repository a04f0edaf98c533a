import type { Context, Hono } from "hono";
import { freezeState } from "./backend.js";
import { pathOf, readJson, sendJson } from "./http-replies.js";
import { apiMethods } from "./request-guards.js";
import type { WebContext, WebEnv } from "./web-context.js";

const encoder = new TextEncoder();

/**
 * The JSON API under `/api` (signed in, CSRF-checked): the inbox, the run list and one run,
 * answers, resume and halt, the fleet's freeze, and the live feed. Anything else under `/api`
 * is a JSON 404 naming the method and path.
 */
export function apiRoutes(app: Hono<WebEnv>, context: WebContext): void {
  const { reads, actions, backend } = context;
  app.use("/api", apiMethods());
  app.use("/api/*", apiMethods());

  app.get("/api/inbox", async (c) => sendJson(c, 200, await reads.inbox()));
  app.get("/api/runs", async (c) => sendJson(c, 200, await reads.runs((key) => c.req.query(key))));
  app.get("/api/fleet", async (c) =>
    sendJson(c, 200, { fleet: await freezeState(backend.freezeStore) }),
  );
  app.get("/api/live", (c) => liveFeed(c.req.query("since") ?? "", context));
  app.get("/api/runs/:runId", async (c) => {
    const runId = c.req.param("runId");
    const data = await reads.run(runId);
    return data ? sendJson(c, 200, data) : sendJson(c, 404, { error: `run ${runId} not found` });
  });

  app.post("/api/runs/:runId/approvals/:requestId", async (c) => {
    const { runId, requestId } = c.req.param();
    const reply = await actions.answer(runId, requestId, await readJson(c), c.get("user"));
    return sendJson(c, 200, reply);
  });
  app.post("/api/runs/:runId/resume", async (c) =>
    sendJson(c, 200, await actions.resume(c.req.param("runId"))),
  );
  app.post("/api/runs/:runId/halt", async (c) => {
    const body = await readJson(c);
    return sendJson(c, 200, await actions.halt(c.req.param("runId"), body.reason, c.get("user")));
  });
  app.post("/api/fleet/freeze", async (c) => {
    const body = await readJson(c);
    return sendJson(c, 200, await actions.freeze(body.reason, c.get("user")));
  });
  app.post("/api/fleet/unfreeze", async (c) =>
    sendJson(c, 200, await actions.unfreeze(c.get("user"))),
  );

  const noRoute = (c: Context<WebEnv>) =>
    sendJson(c, 404, { error: `no API route ${c.req.method} ${pathOf(c)}` });
  app.all("/api", noRoute);
  app.all("/api/*", noRoute);
}

/**
 * `GET /api/live`: a server-sent event stream that says `change` whenever the state the page
 * rendered (`since`) is no longer current. Ends when the page goes or the server closes.
 */
function liveFeed(since: string, context: WebContext): Response {
  let client: { write(text: string): void; end(): void } | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(": live\n\n"));
      client = {
        write(text) {
          try {
            controller.enqueue(encoder.encode(text));
          } catch {
            // The page went between the poll and this write; cancel() removes it.
          }
        },
        end() {
          try {
            controller.close();
          } catch {
            // Already closed by the page.
          }
        },
      };
      context.live.add(client, since);
    },
    cancel() {
      if (client) context.live.remove(client);
    },
  });
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-store",
      connection: "keep-alive",
    },
  });
}
