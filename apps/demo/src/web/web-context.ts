import type { HttpBindings } from "@hono/node-server";
import type { WebBackend } from "./backend.js";
import type { LiveFeed } from "./live-feed.js";
import type { RunActions } from "./run-actions.js";
import type { RunIndex } from "./run-index.js";
import type { RunReads } from "./run-reads.js";
import type { Session, SessionKeeper } from "./session.js";

/**
 * What the web inbox's routes share: the backend, the sign-ins, the run index, the live feed,
 * the reads and the actions. `createWebHandler` builds one per server.
 */
export interface WebContext {
  readonly backend: WebBackend;
  readonly sessions: SessionKeeper;
  readonly index: RunIndex;
  readonly live: LiveFeed;
  readonly reads: RunReads;
  readonly actions: RunActions;
  /** The `host:port` values the Host header may name (lower case). */
  readonly hosts: ReadonlySet<string>;
  /** The origins a browser on one of `hosts` sends (`http://host:port`). */
  readonly origins: ReadonlySet<string>;
  readonly port: number;
  /** The header a trusted reverse proxy names the signed-in person in, if any. */
  readonly trustProxyHeader?: string;
  /** Who answers are recorded as when neither a session nor the proxy header says. */
  readonly user: string;
  /** Resolves once every run has been indexed; every request waits for it. */
  readonly ready: Promise<void>;
  now(): number;
  /** Reports a background failure; never throws. */
  report(error: unknown, where: string): void;
}

/** What the middleware leaves on a request for the handlers after it. */
export interface WebVariables {
  /** The CSP nonce of this response's inline script and style. */
  nonce: string;
  /** The signed-in browser's session, if the request carries a valid cookie. */
  session: Session | undefined;
  /** Whether the request carries the shared secret in `x-loopguard-secret`. */
  bySecret: boolean;
  /** Who this request's answers are recorded as. */
  user: string;
}

/** The hono environment of the web inbox: the Node request and response, and the variables. */
export interface WebEnv {
  Bindings: HttpBindings;
  Variables: WebVariables;
}
