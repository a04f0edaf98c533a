import type { IncomingMessage, ServerResponse } from "node:http";
import { getRequestListener } from "@hono/node-server";
import type { WebBackend } from "./backend.js";
import { LiveFeed } from "./live-feed.js";
import { RunActions } from "./run-actions.js";
import { RunIndex } from "./run-index.js";
import { RunReads } from "./run-reads.js";
import { SessionKeeper } from "./session.js";
import { webApp } from "./web-app.js";
import type { WebContext } from "./web-context.js";

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

/**
 * Builds the handler behind `loopguard serve`: the approval inbox, the run browser and the
 * fleet's kill switch as pages, over a JSON API, with the shared-secret webhook kept. It is a
 * hono app (`web-app.ts` holds the route table) behind `@hono/node-server`'s request listener.
 *
 * Every route needs a session (from the printed one-time URL or the `/login` form) or the
 * shared secret in `x-loopguard-secret`. The Host header must name this server (so a DNS
 * rebinding page cannot read it), a foreign Origin is refused, and POSTs from a session carry
 * its CSRF token.
 */
export function createWebHandler(options: WebOptions): WebHandler {
  const now = options.now ?? Date.now;
  const report = (error: unknown, where: string) => {
    try {
      options.onError?.(error, where);
    } catch {
      // A reporter that throws must not break the server.
    }
  };
  const sessions = new SessionKeeper({ secret: options.secret, user: options.user, now });
  const hosts = allowedHosts(options);
  const backend = options.backend;
  const index = new RunIndex(backend.store, backend.watchDir ? { watchDir: backend.watchDir } : {});
  const ready = index.start();
  ready.catch((error) => report(error, "indexing the runs"));
  const live = new LiveFeed({ index, backend, pollMs: options.livePollMs ?? 1_000, report });
  const context: WebContext = {
    backend,
    sessions,
    index,
    live,
    reads: new RunReads({ backend, index, now }),
    actions: new RunActions({ backend, index, live, now }),
    hosts,
    origins: new Set([...hosts].map((host) => `http://${host}`)),
    port: options.port,
    ...(options.trustProxyHeader ? { trustProxyHeader: options.trustProxyHeader } : {}),
    user: options.user,
    ready,
    now,
    report,
  };
  const app = webApp(context);
  const listener = getRequestListener(app.fetch, {
    // The process runs agents whose SDKs use fetch: keep Node's own Request and Response.
    overrideGlobalObjects: false,
    // A request without a Host header still reaches the Host check, which refuses it.
    hostname: "host-header.invalid",
    // A request line or Host header no URL can be built from never reaches the app.
    errorHandler: () =>
      new Response(`${JSON.stringify({ error: "bad request URL" })}\n`, {
        status: 400,
        headers: {
          "content-type": "application/json; charset=utf-8",
          "cache-control": "no-store",
          "x-content-type-options": "nosniff",
        },
      }),
  });
  const displayHost =
    options.host === "0.0.0.0" || options.host === "::" ? "127.0.0.1" : options.host;
  const signInHost = displayHost.includes(":") ? `[${displayHost}]` : displayHost;
  return {
    handle: async (request, response) => {
      await listener(request, response);
    },
    signInUrl: `http://${signInHost}:${options.port}/?token=${sessions.loginToken}`,
    ready,
    close() {
      index.close();
      live.close();
    },
  };
}

/** The `host:port` values the Host header may name: the bound address, loopback, and more. */
function allowedHosts(options: WebOptions): Set<string> {
  return new Set(
    [options.host, "127.0.0.1", "localhost", "[::1]"]
      .map(
        (host) =>
          `${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${options.port}`,
      )
      .concat(options.allowedHosts ?? [])
      .map((host) => host.toLowerCase()),
  );
}
