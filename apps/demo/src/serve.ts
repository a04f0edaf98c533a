import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { type Span, spansFromEvents } from "@loopguard/core";
import { supportDefences } from "@loopguard/evals";
import { type DemoPaths, demoAgent } from "./demo-agent.js";
import { loadTraceViewer } from "./trace-viewer.js";

/** Options of the approval webhook server. */
export interface ServeOptions {
  port: number;
  /** The shared secret callers send in `x-loopguard-secret`. */
  secret: string;
  paths: DemoPaths;
  out: (line: string) => void;
  /** Default 127.0.0.1. */
  host?: string;
}

const json = (response: ServerResponse, status: number, body: unknown) => {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(`${JSON.stringify(body)}\n`);
};

async function readBody(request: IncomingMessage, limit = 64 * 1024): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new Error("body too large");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

const sameSecret = (given: string | undefined, expected: string) => {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
};

/**
 * Serves the runs over HTTP: `GET /runs`, `GET /runs/:id/trace.html`, and the approval
 * webhook `POST /runs/:id/approve` with a JSON body `{ decision, approver, requestId? }` and
 * the shared secret in `x-loopguard-secret` (wrong or missing: 401). A decision other than
 * `approve` or `deny` is unreadable and halts the run. Resolves when the server closes.
 */
export function serve(options: ServeOptions): Promise<void> {
  const server = createServer(async (request, response) => {
    try {
      const url = new URL(request.url ?? "/", "http://localhost");
      const parts = url.pathname.split("/").filter(Boolean);
      if (request.method === "GET" && url.pathname === "/runs") {
        const { store } = await demoAgent({ paths: options.paths });
        return json(response, 200, await store.list());
      }
      if (
        request.method === "GET" &&
        parts.length === 3 &&
        parts[0] === "runs" &&
        parts[2] === "trace.html"
      ) {
        const demo = await demoAgent({ paths: options.paths });
        const events = await demo.store.read(parts[1]!);
        if (events.length === 0) return json(response, 404, { error: `run ${parts[1]} not found` });
        const viewer = await loadTraceViewer();
        if (!viewer) return json(response, 501, { error: "the HTML viewer is not in this build" });
        const redact = supportDefences(demo.packages).redact;
        response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        return response.end(
          viewer.renderTraceHtml(
            spansFromEvents(events).map((span) => redact(span) as Span),
            { runId: parts[1]! },
          ),
        );
      }
      if (
        request.method === "POST" &&
        parts.length === 3 &&
        parts[0] === "runs" &&
        parts[2] === "approve"
      ) {
        if (
          !sameSecret(request.headers["x-loopguard-secret"] as string | undefined, options.secret)
        )
          return json(response, 401, { error: "missing or wrong x-loopguard-secret" });
        let body: { decision?: unknown; approver?: unknown; requestId?: unknown; note?: unknown };
        try {
          body = JSON.parse(await readBody(request));
        } catch {
          return json(response, 400, {
            error: 'the body must be JSON: { "decision": "approve" | "deny", "approver": "name" }',
          });
        }
        if (body === null || typeof body !== "object" || Array.isArray(body))
          return json(response, 400, { error: "the body must be a JSON object" });
        if (typeof body.approver !== "string" || body.approver.trim() === "")
          return json(response, 400, { error: "approver must name the person approving" });
        // Only "approve" or "deny" is consent or refusal; any other answer is unreadable,
        // recorded as indeterminate, and halts the run (approvals fail closed).
        const readable = body.decision === "approve" || body.decision === "deny";
        const demo = await demoAgent({ paths: options.paths, runId: parts[1]! });
        const result = await demo.agent.approve(parts[1]!, {
          decision: readable ? (body.decision as "approve" | "deny") : "indeterminate",
          approver: body.approver,
          ...(typeof body.requestId === "string" ? { requestId: body.requestId } : {}),
          ...(readable
            ? typeof body.note === "string"
              ? { note: body.note }
              : {}
            : { note: `unreadable decision: ${JSON.stringify(body.decision)?.slice(0, 200)}` }),
        });
        return json(response, 200, {
          runId: result.runId,
          status: result.status,
          blocked: result.blocked.map((call) => ({ tool: call.tool, reason: call.reason })),
        });
      }
      return json(response, 404, {
        error: "routes: GET /runs, GET /runs/:id/trace.html, POST /runs/:id/approve",
      });
    } catch (error) {
      return json(response, 409, { error: error instanceof Error ? error.message : String(error) });
    }
  });
  return new Promise((resolve, reject) => {
    server.on("error", reject);
    server.listen(options.port, options.host ?? "127.0.0.1", () => {
      options.out(
        `loopguard serve: http://${options.host ?? "127.0.0.1"}:${options.port} (GET /runs, GET /runs/:id/trace.html, POST /runs/:id/approve)`,
      );
    });
    server.on("close", () => resolve());
  });
}
