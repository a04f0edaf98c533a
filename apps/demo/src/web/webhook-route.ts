import type { Hono } from "hono";
import { readJson, sendJson } from "./http-replies.js";
import type { WebContext, WebEnv } from "./web-context.js";

/**
 * The webhook of earlier releases: `POST /runs/:id/approve` with `{ decision, approver,
 * requestId?, note? }`, usually with the shared secret. Replies once the run has gone on.
 */
export function webhookRoute(app: Hono<WebEnv>, context: WebContext): void {
  app.post("/runs/:runId/approve", async (c) => {
    const body = await readJson(c);
    return sendJson(c, 200, await context.actions.webhookAnswer(c.req.param("runId"), body));
  });
}
