import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Span, StoredEvent } from "@loopguard/core";
import { spansFromEvents } from "@loopguard/core/plugin";
import { traceViewer } from "../trace-viewer.js";
import { freezeState, pageOf, readRun, type WebBackend } from "./backend.js";
import { escapeHtml, type PageBoot, plainPage, shellPage } from "./page.js";
import { RunIndex } from "./run-index.js";
import { type PendingApproval, runView } from "./run-view.js";
import { type Session, SessionKeeper } from "./session.js";

/** Options of the web inbox. */
export interface WebOptions {
  backend: WebBackend;
  /** The shared secret (`LOOPGUARD_WEBHOOK_SECRET`): the webhook's key and a way to sign in. */
  secret: string;
  /** Who answers are recorded as (`--user`, else the OS user). */
  user: string;
  /**
   * A header set by a trusted reverse proxy that names the signed-in person (for example
   * `x-forwarded-user`). Only set it when the proxy strips the header from what clients send.
   */
  trustProxyHeader?: string;
  /** The address the server listens on and its port: the Host header must name one of them. */
  host: string;
  port: number;
  /** More `host:port` values browsers may use (a reverse proxy's name). */
  allowedHosts?: readonly string[];
  /** How often the live feed looks for changes. Default 1 000 ms. */
  livePollMs?: number;
  /** Where background failures (a resume after an answer) are reported. */
  onError?: (error: unknown, where: string) => void;
  now?: () => number;
}

/** The web inbox's request handler, with its one-time sign-in URL. */
export interface WebHandler {
  handle(request: IncomingMessage, response: ServerResponse): Promise<void>;
  /** `http://HOST:PORT/?token=...`: printed by `serve` on its first line. */
  readonly signInUrl: string;
  /** Resolves once every run has been indexed (requests wait for it too). */
  readonly ready: Promise<void>;
  close(): void;
}

type Reply = { status: number; body: unknown };

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const maxBody = 64 * 1024;

/**
 * Builds the handler behind `loopguard serve`: the approval inbox, the run browser and the
 * fleet's kill switch as pages, over a JSON API, with the shared-secret webhook kept.
 *
 * Every route needs a session (from the printed one-time URL or the `/login` form) or the
 * shared secret in `x-loopguard-secret`. The Host header must name this server (so a DNS
 * rebinding page cannot read it), a foreign Origin is refused, and POSTs from a session carry
 * its CSRF token.
 */
export function createWebHandler(options: WebOptions): WebHandler {
  const now = options.now ?? Date.now;
  const sessions = new SessionKeeper({ secret: options.secret, user: options.user, now });
  const hosts = new Set(
    [options.host, "127.0.0.1", "localhost", "[::1]"]
      .map(
        (host) =>
          `${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${options.port}`,
      )
      .concat(options.allowedHosts ?? [])
      .map((host) => host.toLowerCase()),
  );
  const origins = new Set([...hosts].map((host) => `http://${host}`));
  const displayHost =
    options.host === "0.0.0.0" || options.host === "::" ? "127.0.0.1" : options.host;
  const signInHost = displayHost.includes(":") ? `[${displayHost}]` : displayHost;
  const signInUrl = `http://${signInHost}:${options.port}/?token=${sessions.loginToken}`;
  const backend = options.backend;
  const index = new RunIndex(backend.store, backend.watchDir ? { watchDir: backend.watchDir } : {});
  const ready = index.start();
  ready.catch((error) => report(error, "indexing the runs"));
  const locks = new Map<string, Promise<unknown>>();
  /** The logs of parked runs, by run id, with the event count they were read at. */
  const parkedLogs = new Map<string, { events: number; log: StoredEvent[] }>();
  /** Each live page, with the state it was last told about (its page's version at first). */
  const live = new Map<ServerResponse, string>();
  let liveTimer: ReturnType<typeof setInterval> | undefined;

  const report = (error: unknown, where: string) => {
    try {
      options.onError?.(error, where);
    } catch {
      // A reporter that throws must not break the server.
    }
  };

  /** Runs one mutation of a run at a time, so two tabs answering at once are ordered. */
  async function exclusive<T>(runId: string, work: () => Promise<T>): Promise<T> {
    const before = locks.get(runId) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(work);
    locks.set(runId, mine);
    try {
      return await mine;
    } finally {
      if (locks.get(runId) === mine) locks.delete(runId);
    }
  }

  const userOf = (request: IncomingMessage, session: Session | undefined) => {
    if (options.trustProxyHeader) {
      const value = request.headers[options.trustProxyHeader.toLowerCase()];
      if (typeof value === "string" && value.trim() !== "") return value.trim().slice(0, 200);
    }
    return session?.user ?? options.user;
  };

  async function inbox(): Promise<{
    pending: PendingApproval[];
    fleet: unknown;
    truncated?: number;
  }> {
    await index.refresh();
    const waiting = index.filter({ status: "awaiting_approval" });
    const limit = 500;
    const pending: PendingApproval[] = [];
    const views = await Promise.all(
      waiting.slice(0, limit).map(async (row) => {
        // A parked run's log changes only when someone answers or it goes on: read it again
        // only when its summary says it grew (each live refresh would re-read every log).
        let cached = parkedLogs.get(row.runId);
        if (!cached || cached.events !== row.events) {
          cached = { events: row.events, log: (await readRun(backend.store, row.runId)).events };
          parkedLogs.set(row.runId, cached);
        }
        const events = cached.log;
        return runView(row.runId, events, {
          now: now(),
          ...(backend.policyDigest ? { policyDigest: backend.policyDigest } : {}),
          redact: (value) => backend.redact(value),
        });
      }),
    );
    // Runs no longer parked leave the cache.
    const parked = new Set(waiting.map((row) => row.runId));
    for (const runId of parkedLogs.keys()) if (!parked.has(runId)) parkedLogs.delete(runId);
    for (const view of views) pending.push(...view.pending);
    pending.sort((a, b) => a.askedAt - b.askedAt);
    return {
      pending,
      fleet: await freezeState(backend.freezeStore),
      ...(waiting.length > limit ? { truncated: waiting.length - limit } : {}),
    };
  }

  async function runData(runId: string) {
    const { events, error } = await readRun(backend.store, runId);
    if (events.length === 0 && !error) return undefined;
    const view = runView(runId, events, {
      now: now(),
      ...(backend.policyDigest ? { policyDigest: backend.policyDigest } : {}),
      redact: (value) => backend.redact(value),
    });
    if (error) {
      // A corrupt log still shows what the list knows of the run, with the error.
      const row = index.get(runId);
      if (!row) return { ...view, corrupt: error, status: "unreadable" };
      return {
        ...view,
        corrupt: error,
        status: row.status,
        ...(row.agentId ? { agentId: row.agentId } : {}),
        ...(row.task ? { task: String(backend.redact(row.task)) } : {}),
        steps: row.steps,
        costUsd: row.costUsd,
        createdAt: row.createdAt,
        updatedAt: row.updatedAt,
      };
    }
    return view;
  }

  async function runsQuery(url: URL) {
    const limit = Number(url.searchParams.get("limit") ?? "50");
    if (!Number.isInteger(limit) || limit < 1 || limit > 500)
      throw new HttpError(400, "limit must be an integer from 1 to 500");
    const status = url.searchParams.get("status") ?? "";
    const agent = url.searchParams.get("agent") ?? "";
    const cursor = url.searchParams.get("cursor") ?? "";
    try {
      await index.refresh();
      const page = pageOf(
        index.filter({ ...(status ? { status } : {}), ...(agent ? { agentId: agent } : {}) }),
        { limit, ...(cursor ? { cursor } : {}) },
      );
      return {
        ...page,
        runs: page.runs.map((row) =>
          row.task ? { ...row, task: String(backend.redact(row.task)) } : row,
        ),
      };
    } catch (error) {
      if (error instanceof RangeError) throw new HttpError(400, error.message);
      throw error;
    }
  }

  async function answer(
    runId: string,
    requestId: string,
    body: Record<string, unknown>,
    approver: string,
  ): Promise<Reply> {
    const decision = body.decision;
    if (decision !== "approve" && decision !== "deny")
      throw new HttpError(400, 'decision must be "approve" or "deny"');
    const note = typeof body.note === "string" ? body.note.trim().slice(0, 2_000) : "";
    if (decision === "deny" && note === "")
      throw new HttpError(
        400,
        "a denial needs a reason (note): it is recorded and shown to the agent",
      );
    return exclusive(runId, async () => {
      const { events, error } = await readRun(backend.store, runId);
      if (error) throw new HttpError(409, `the run's log cannot be read: ${error}`);
      if (events.length === 0) throw new HttpError(404, `run ${runId} not found`);
      const view = runView(runId, events, {
        now: now(),
        ...(backend.policyDigest ? { policyDigest: backend.policyDigest } : {}),
      });
      const pending = view.pending.find((item) => item.requestId === requestId);
      if (!pending) {
        const answered = view.answered.find((item) => item.requestId === requestId);
        if (answered)
          throw new HttpError(
            409,
            `already answered: ${answered.decision} by ${answered.approver ?? "someone"} at ${new Date(answered.at).toISOString()}`,
          );
        throw new HttpError(404, `run ${runId} has no approval request ${requestId}`);
      }
      if (pending.state !== "pending")
        throw new HttpError(409, `cannot be answered: ${pending.why ?? pending.state}`);
      const result = await backend.answer(runId, {
        decision,
        approver,
        requestId,
        ...(note ? { note } : {}),
      });
      index.touch(runId);
      notify();
      return { status: 200, body: { runId, requestId, decision, approver, status: result.status } };
    });
  }

  function notify(runId?: string): void {
    if (runId !== undefined) index.touch(runId);
    for (const client of live.keys()) client.write("event: change\ndata: {}\n\n");
  }

  /** Tells every page whose state differs from `current` to refresh. */
  function announce(current: string): void {
    for (const [client, seen] of live) {
      if (seen === current) continue;
      live.set(client, current);
      client.write("event: change\ndata: {}\n\n");
    }
  }

  async function signature(): Promise<string> {
    await index.refresh();
    const fleet = await freezeState(backend.freezeStore);
    const newest = index.all()[0];
    return JSON.stringify([
      newest?.updatedAt,
      newest?.runId,
      newest?.status,
      index.filter({ status: "awaiting_approval" }).length,
      index.all().length,
      fleet.frozen,
      fleet.at,
    ]);
  }

  function startLive(): void {
    if (liveTimer) return;
    liveTimer = setInterval(() => {
      if (live.size === 0) {
        clearInterval(liveTimer);
        liveTimer = undefined;
        return;
      }
      signature()
        .then(announce)
        .catch((error) => report(error, "live feed"));
    }, options.livePollMs ?? 1_000);
    liveTimer.unref?.();
  }

  function send(
    response: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ): void {
    response.writeHead(status, {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      ...headers,
    });
    response.end(`${JSON.stringify(body)}\n`);
  }

  function html(
    response: ServerResponse,
    status: number,
    text: string,
    nonce: string,
    headers: Record<string, string> = {},
  ): void {
    response.writeHead(status, {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "referrer-policy": "same-origin",
      "x-frame-options": "DENY",
      "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; frame-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
      ...headers,
    });
    response.end(text);
  }

  /** The answer to a spent or wrong sign-in link: 401, and how to sign in instead. */
  function usedLink(response: ServerResponse, nonce: string): void {
    html(
      response,
      401,
      plainPage(
        "Sign in",
        `<h1>This sign-in link was already used</h1><p>Each printed link works once. <a href="/login">Sign in with the shared secret</a> or restart <code>loopguard serve</code> for a new link.</p>`,
        nonce,
      ),
      nonce,
    );
  }

  async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
    const text = await readText(request);
    if (text.trim() === "") return {};
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new HttpError(400, "the body must be JSON");
    }
    if (body === null || typeof body !== "object" || Array.isArray(body))
      throw new HttpError(400, "the body must be a JSON object");
    return body as Record<string, unknown>;
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    await ready.catch(() => undefined);
    const nonce = randomBytes(16).toString("base64");
    const method = request.method ?? "GET";
    let url: URL;
    try {
      url = new URL(request.url ?? "/", "http://localhost");
    } catch {
      return send(response, 400, { error: "bad request URL" });
    }
    const path = url.pathname;
    const wantsHtml =
      !path.startsWith("/api/") && !(request.headers.accept ?? "").includes("application/json");
    const fail = (status: number, message: string) =>
      wantsHtml && method === "GET"
        ? html(
            response,
            status,
            plainPage(String(status), `<h1>${status}</h1><p>${escapeHtml(message)}</p>`, nonce),
            nonce,
          )
        : send(response, status, { error: message });

    // DNS rebinding: a page on another name that resolves here must not reach this server.
    const host = (request.headers.host ?? "").toLowerCase();
    if (!hosts.has(host))
      return send(response, 403, {
        error: `Host ${JSON.stringify(host)} is not this server's; open it as http://127.0.0.1:${options.port}/ (or add the name with --allowed-host)`,
      });
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== "null" && !origins.has(origin.toLowerCase()))
      return send(response, 403, { error: `cross-origin request from ${origin} refused` });
    if (origin === "null")
      return send(response, 403, { error: "requests from an opaque origin are refused" });

    try {
      // Sign-in: the one-time token of the printed URL, or the shared secret in the form.
      // A GET of the printed URL does not spend the token (a link previewer, a prefetch or a
      // scanner would use it up): the page posts it to /login, which does.
      if (method === "GET" && path === "/" && url.searchParams.has("token")) {
        const token = url.searchParams.get("token") ?? "";
        if (!sessions.isLoginToken(token)) return usedLink(response, nonce);
        return html(
          response,
          200,
          plainPage(
            "Sign in",
            `<h1>Signing you in…</h1>
<form class="login" id="token-login" method="post" action="/login">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<p>This link signs in once. <button type="submit">Sign in</button></p>
</form>
<script nonce="${nonce}">document.getElementById("token-login").submit();</script>`,
            nonce,
          ),
          // referrer-policy stays same-origin: no-referrer would make the browser send
          // Origin: null with the POST, which this server refuses.
          nonce,
        );
      }
      if (path === "/login") {
        if (method === "POST") {
          const form = new URLSearchParams(await readText(request));
          if (form.has("token")) {
            const byToken = sessions.exchange(form.get("token") ?? "");
            if (!byToken) return usedLink(response, nonce);
            response.writeHead(303, {
              location: "/",
              "set-cookie": sessions.cookie(byToken, false),
              "cache-control": "no-store",
            });
            return void response.end();
          }
          const session = sessions.signInWithSecret(form.get("secret") ?? "");
          if (!session)
            return html(
              response,
              401,
              plainPage("Sign in", loginForm("That is not the secret."), nonce),
              nonce,
            );
          response.writeHead(303, {
            location: "/",
            "set-cookie": sessions.cookie(session, false),
            "cache-control": "no-store",
          });
          return void response.end();
        }
        return html(response, 200, plainPage("Sign in", loginForm(), nonce), nonce);
      }

      const session = sessions.of(request);
      const bySecret = sessions.hasSecret(request);
      if (!session && !bySecret) {
        if (wantsHtml && method === "GET")
          return html(
            response,
            401,
            plainPage("Sign in", loginForm("Sign in to see this page."), nonce),
            nonce,
          );
        return send(response, 401, {
          error:
            "sign in first: open the URL `loopguard serve` printed, or send the shared secret in x-loopguard-secret",
        });
      }
      if (method === "POST" && !bySecret) {
        // A session's POST must come from this server's own page.
        if (!origin && !(request.headers.referer ?? "").startsWith(`http://${host}/`))
          return send(response, 403, { error: "a POST needs an Origin or Referer of this server" });
        if (request.headers["x-csrf-token"] !== session!.csrf)
          return send(response, 403, { error: "missing or stale CSRF token: reload the page" });
      }
      const user = bySecret && !session ? userOf(request, undefined) : userOf(request, session);
      const parts = path.split("/").filter(Boolean).map(decodeURIComponent);

      if (method === "POST" && path === "/logout") {
        if (session) sessions.end(session);
        response.writeHead(303, {
          location: "/login",
          "set-cookie": `loopguard_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`,
        });
        return void response.end();
      }

      // The API.
      if (parts[0] === "api") {
        if (method === "GET" && path === "/api/inbox") return send(response, 200, await inbox());
        if (method === "GET" && path === "/api/runs")
          return send(response, 200, await runsQuery(url));
        if (method === "GET" && path === "/api/fleet")
          return send(response, 200, { fleet: await freezeState(backend.freezeStore) });
        if (method === "GET" && path === "/api/live") {
          response.writeHead(200, {
            "content-type": "text/event-stream",
            "cache-control": "no-store",
            connection: "keep-alive",
          });
          response.write(": live\n\n");
          // The page says which state it rendered: a change between its render and this
          // connection is announced at once instead of being taken as the baseline.
          live.set(response, url.searchParams.get("since") ?? "");
          request.on("close", () => live.delete(response));
          startLive();
          signature()
            .then(announce)
            .catch((error) => report(error, "live feed"));
          return;
        }
        if (parts[1] === "runs" && parts[2]) {
          const runId = parts[2];
          if (method === "GET" && parts.length === 3) {
            const data = await runData(runId);
            return data
              ? send(response, 200, data)
              : send(response, 404, { error: `run ${runId} not found` });
          }
          if (method === "POST" && parts[3] === "approvals" && parts[4] && parts.length === 5) {
            const reply = await answer(runId, parts[4], await readJson(request), user);
            return send(response, reply.status, reply.body);
          }
          if (method === "POST" && parts[3] === "resume" && parts.length === 4) {
            const result = await exclusive(runId, () => backend.resume(runId));
            notify(runId);
            return send(response, 200, { runId, status: result.status });
          }
          if (method === "POST" && parts[3] === "halt" && parts.length === 4) {
            const body = await readJson(request);
            const reason = typeof body.reason === "string" ? body.reason.trim().slice(0, 500) : "";
            if (reason === "") throw new HttpError(400, "halting needs a reason");
            const result = await exclusive(runId, () => backend.halt(runId, reason, user));
            notify(runId);
            return send(response, 200, { runId, status: result.status });
          }
        }
        if (method === "POST" && path === "/api/fleet/freeze") {
          const body = await readJson(request);
          const reason = typeof body.reason === "string" ? body.reason.trim().slice(0, 500) : "";
          if (reason === "")
            throw new HttpError(400, "freezing needs a reason: every refused call shows it");
          await backend.freezeStore.freeze({ reason, by: user });
          notify();
          return send(response, 200, { fleet: await freezeState(backend.freezeStore) });
        }
        if (method === "POST" && path === "/api/fleet/unfreeze") {
          await backend.freezeStore.unfreeze({ by: user });
          notify();
          return send(response, 200, { fleet: await freezeState(backend.freezeStore) });
        }
        return send(response, 404, { error: `no API route ${method} ${path}` });
      }

      // The webhook of earlier releases: POST /runs/:id/approve with the secret.
      if (
        method === "POST" &&
        parts[0] === "runs" &&
        parts[2] === "approve" &&
        parts.length === 3
      ) {
        const body = await readJson(request);
        const runId = parts[1]!;
        if (typeof body.approver !== "string" || body.approver.trim() === "")
          throw new HttpError(400, "approver must name the person approving");
        const readable = body.decision === "approve" || body.decision === "deny";
        const result = await exclusive(runId, () =>
          backend.answer(
            runId,
            {
              decision: readable ? (body.decision as "approve" | "deny") : "indeterminate",
              approver: String(body.approver),
              ...(typeof body.requestId === "string" ? { requestId: body.requestId } : {}),
              ...(readable
                ? typeof body.note === "string"
                  ? { note: body.note }
                  : {}
                : { note: `unreadable decision: ${JSON.stringify(body.decision)?.slice(0, 200)}` }),
            },
            { wait: true },
          ),
        );
        notify(runId);
        return send(response, 200, { runId, status: result.status });
      }

      if (method !== "GET")
        return send(response, 405, { error: `${method} ${path} is not a route` });

      // Pages.
      if (parts[0] === "runs" && parts.length === 3 && parts[2] === "trace.html") {
        const runId = parts[1]!;
        const { events, error } = await readRun(backend.store, runId);
        if (error) return fail(409, `run ${runId}'s log cannot be read: ${error}`);
        if (events.length === 0) return fail(404, `run ${runId} not found`);
        const viewer = traceViewer;
        const trace = viewer.buildTraceJson(events) as { meta?: Record<string, unknown> };
        const spans = spansFromEvents(events).map((span) => backend.redact(span) as Span);
        const view = runView(runId, events, { now: now() });
        response.writeHead(200, {
          "content-type": "text/html; charset=utf-8",
          "cache-control": "no-store",
          "x-content-type-options": "nosniff",
          "content-security-policy":
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'self'",
        });
        return void response.end(
          viewer.renderTraceHtml(spans, { ...(trace.meta ?? {}), runId, status: view.status } as {
            runId: string;
          }),
        );
      }
      // A script of earlier releases listed runs as JSON with the secret.
      if (path === "/runs" && bySecret && !session && !wantsHtmlExplicit(request)) {
        await index.refresh();
        return send(response, 200, index.all());
      }

      // The state before the page's data is read: a change landing while it is read is then
      // announced to the page when its live feed connects (never missed).
      const version = await signature();
      const csrf = session?.csrf ?? "";
      const page = async (
        view: PageBoot["view"],
        data: unknown,
        status = 200,
        query?: Record<string, string>,
      ) => {
        const waiting =
          view === "inbox"
            ? (data as { pending: PendingApproval[] }).pending.filter(
                (item) => item.state === "pending",
              ).length
            : index.filter({ status: "awaiting_approval" }).length;
        return html(
          response,
          status,
          shellPage(
            { view, user, csrf, where: backend.where, data, version, ...(query ? { query } : {}) },
            nonce,
            waiting,
          ),
          nonce,
        );
      };
      if (path === "/") return page("inbox", await inbox());
      if (path === "/fleet")
        return page("fleet", { fleet: await freezeState(backend.freezeStore) });
      if (path === "/runs") {
        const query: Record<string, string> = {};
        for (const key of ["status", "agent"]) {
          const value = url.searchParams.get(key);
          if (value) query[key] = value;
        }
        return page("runs", await runsQuery(url), 200, query);
      }
      if (parts[0] === "runs" && parts.length === 2) {
        const data = await runData(parts[1]!);
        if (!data)
          return fail(
            404,
            `run ${parts[1]} not found: it may have been deleted, or the id is wrong`,
          );
        return page("run", data);
      }
      return fail(404, `no page at ${path}`);
    } catch (error) {
      if (error instanceof HttpError) return fail(error.status, error.message);
      report(error, `${method} ${path}`);
      return fail(500, error instanceof Error ? error.message : String(error));
    }
  }

  return {
    handle,
    signInUrl,
    ready,
    close() {
      index.close();
      if (liveTimer) clearInterval(liveTimer);
      for (const client of live.keys()) client.end();
      live.clear();
    },
  };
}

function wantsHtmlExplicit(request: IncomingMessage): boolean {
  return (request.headers.accept ?? "").includes("text/html");
}

function loginForm(message?: string): string {
  return `<h1>Sign in</h1>
${message ? `<p role="alert">${escapeHtml(message)}</p>` : ""}
<p>Open the link <code>loopguard serve</code> printed on its first line, or enter the shared secret (<code>LOOPGUARD_WEBHOOK_SECRET</code>).</p>
<form class="login" method="post" action="/login">
<label for="secret">Shared secret</label>
<input id="secret" name="secret" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`;
}

async function readText(request: IncomingMessage): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > maxBody) throw new HttpError(413, `the body is over ${maxBody} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
