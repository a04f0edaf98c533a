// A Cloudflare Worker: `wrangler dev` (or `wrangler deploy`) in this folder. POST / answers a
// ticket and keeps the run in D1 (the DB binding in wrangler.toml); POST /refund parks a refund
// over the limit for approval and POST /approve/<runId> approves it in a later request; GET /runs
// lists the runs.
import { type D1Database, d1EventStore } from "@loopguard/cloudflare";
import { approvalDesk } from "../../approval-desk.ts";
import { answerTicket } from "../../support-desk.ts";

interface Env {
  DB: D1Database;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const store = d1EventStore({ database: env.DB });
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname === "/")
      return Response.json(await answerTicket("workerd", store));
    // A refund over the limit parks for approval; POST /approve/<runId> approves it later.
    if (request.method === "POST" && url.pathname === "/refund") {
      const result = await approvalDesk(store).run("Refund order A1001 in full (900)");
      return Response.json({ runId: result.runId, status: result.status });
    }
    if (request.method === "POST" && url.pathname.startsWith("/approve/")) {
      const runId = decodeURIComponent(url.pathname.slice("/approve/".length));
      const result = await approvalDesk(store).approve(runId, {
        decision: "approve",
        approver: "lead",
      });
      return Response.json({ runId, status: result.status, answer: result.answer });
    }
    if (request.method === "GET" && url.pathname === "/runs")
      return Response.json(await store.list({ limit: 20 }));
    return new Response(
      "POST / answers a ticket; POST /refund, POST /approve/<runId>; GET /runs\n",
      {
        status: 404,
      },
    );
  },
};
