// A Cloudflare Worker: `wrangler dev` (or `wrangler deploy`) in this folder. POST / answers a
// ticket and keeps the run in D1 (the DB binding in wrangler.toml); GET /runs lists them.
import { type D1Database, d1EventStore } from "@loopguard/cloudflare";
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
    if (request.method === "GET" && url.pathname === "/runs")
      return Response.json(await store.list({ limit: 20 }));
    return new Response("POST / answers a ticket; GET /runs lists runs\n", { status: 404 });
  },
};
