import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** A signed-in browser. */
export interface Session {
  id: string;
  /** Sent back by the page in `x-csrf-token` on every POST. */
  csrf: string;
  /** Who signed in (`--user`, or the OS user); a trusted proxy header overrides it per request. */
  user: string;
  expiresAt: number;
}

/** Options of the session keeper. */
export interface SessionOptions {
  /** The shared secret (`LOOPGUARD_WEBHOOK_SECRET`). */
  secret: string;
  /** The name answers are recorded under. */
  user: string;
  /** How long a session lasts. Default 12 hours. */
  ttlMs?: number;
  now?: () => number;
}

export const sessionCookie = "loopguard_session";

/** Constant-time comparison of two strings. */
export function sameSecret(given: unknown, expected: string): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Keeps the web UI's sign-ins. `serve` prints a URL with a one-time token (like Jupyter); the
 * page at that URL exchanges it with a POST for an HttpOnly, SameSite=Strict session cookie,
 * which spends the token (a GET alone, as a link previewer makes, does not). The shared secret also signs in (the `/login` form), so a lost URL is no lock-out.
 */
export class SessionKeeper {
  readonly #sessions = new Map<string, Session>();
  readonly #options: Required<SessionOptions>;
  #loginToken: string | undefined;

  constructor(options: SessionOptions) {
    this.#options = { ttlMs: 12 * 60 * 60 * 1000, now: Date.now, ...options };
    this.#loginToken = randomBytes(24).toString("base64url");
  }

  /** The one-time token of the printed URL, until it is used. */
  get loginToken(): string | undefined {
    return this.#loginToken;
  }

  /** Whether `token` is the one-time token, still unused (it is not spent by asking). */
  isLoginToken(token: string): boolean {
    return this.#loginToken !== undefined && sameSecret(token, this.#loginToken);
  }

  /** Spends the one-time token: a new session, or `undefined` when the token is wrong or used. */
  exchange(token: string): Session | undefined {
    if (this.#loginToken === undefined || !sameSecret(token, this.#loginToken)) return undefined;
    this.#loginToken = undefined;
    return this.#open();
  }

  /** Signs in with the shared secret (the `/login` form). */
  signInWithSecret(secret: string): Session | undefined {
    return sameSecret(secret, this.#options.secret) ? this.#open() : undefined;
  }

  /** The session of a request's cookie, if it is valid. */
  of(request: IncomingMessage): Session | undefined {
    const id = cookieOf(request.headers.cookie, sessionCookie);
    if (id === undefined) return undefined;
    const session = this.#sessions.get(id);
    if (!session) return undefined;
    if (session.expiresAt <= this.#options.now()) {
      this.#sessions.delete(id);
      return undefined;
    }
    return session;
  }

  /** Whether the request carries the shared secret (the webhook's way in). */
  hasSecret(request: IncomingMessage): boolean {
    return sameSecret(request.headers["x-loopguard-secret"], this.#options.secret);
  }

  end(session: Session): void {
    this.#sessions.delete(session.id);
  }

  /** The `Set-Cookie` value for a session. */
  cookie(session: Session, secure: boolean): string {
    const maxAge = Math.max(0, Math.floor((session.expiresAt - this.#options.now()) / 1000));
    return `${sessionCookie}=${session.id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAge}${secure ? "; Secure" : ""}`;
  }

  #open(): Session {
    const session: Session = {
      id: randomBytes(24).toString("base64url"),
      csrf: randomBytes(24).toString("base64url"),
      user: this.#options.user,
      expiresAt: this.#options.now() + this.#options.ttlMs,
    };
    this.#sessions.set(session.id, session);
    // Old sessions are dropped as new ones open, so the map stays small.
    if (this.#sessions.size > 1_000) {
      const now = this.#options.now();
      for (const [id, entry] of this.#sessions)
        if (entry.expiresAt <= now) this.#sessions.delete(id);
    }
    return session;
  }
}

/** A cookie's value from a `Cookie` header. */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const index = part.indexOf("=");
    if (index < 0) continue;
    if (part.slice(0, index).trim() === name) return part.slice(index + 1).trim();
  }
  return undefined;
}
