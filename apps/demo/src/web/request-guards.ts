import { randomBytes } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { pathOf, sendHtml, sendJson } from "./http-replies.js";
import { plainPage } from "./page.js";
import { loginForm } from "./sign-in-routes.js";
import type { WebContext, WebEnv } from "./web-context.js";

/** Waits for the run index, and gives the response a fresh CSP nonce. */
export function readyFirst(context: WebContext): MiddlewareHandler<WebEnv> {
  return async (c, next) => {
    await context.ready.catch(() => undefined);
    c.set("nonce", randomBytes(16).toString("base64"));
    await next();
  };
}

/**
 * Refuses a request whose Host is not this server's (DNS rebinding: a page on another name
 * that resolves here must not reach it) and one from a foreign or opaque Origin.
 */
export function hostAndOrigin(context: WebContext): MiddlewareHandler<WebEnv> {
  return async (c, next) => {
    const host = (c.env.incoming.headers.host ?? "").toLowerCase();
    if (!context.hosts.has(host))
      return sendJson(c, 403, {
        error: `Host ${JSON.stringify(host)} is not this server's; open it as http://127.0.0.1:${context.port}/ (or add the name with --allowed-host)`,
      });
    const origin = c.req.header("origin");
    if (origin !== undefined && origin !== "null" && !context.origins.has(origin.toLowerCase()))
      return sendJson(c, 403, { error: `cross-origin request from ${origin} refused` });
    if (origin === "null")
      return sendJson(c, 403, { error: "requests from an opaque origin are refused" });
    await next();
  };
}

/**
 * Lets through a request with a session cookie or the shared secret in `x-loopguard-secret`,
 * and says who it acts as (a trusted proxy header wins, then the session, then `--user`).
 * Without either: the sign-in page to a browser's GET, a 401 JSON error to anything else.
 */
export function signedIn(context: WebContext): MiddlewareHandler<WebEnv> {
  return async (c, next) => {
    const request = c.env.incoming;
    const session = context.sessions.of(request);
    const bySecret = context.sessions.hasSecret(request);
    if (!session && !bySecret) {
      const wantsHtml =
        !c.req.path.startsWith("/api/") &&
        !(c.req.header("accept") ?? "").includes("application/json");
      if (wantsHtml && c.req.method === "GET")
        return sendHtml(
          c,
          401,
          plainPage("Sign in", loginForm("Sign in to see this page."), c.get("nonce")),
        );
      return sendJson(c, 401, {
        error:
          "sign in first: open the URL `loopguard serve` printed, or send the shared secret in x-loopguard-secret",
      });
    }
    c.set("session", session);
    c.set("bySecret", bySecret);
    const proxied = context.trustProxyHeader ? c.req.header(context.trustProxyHeader) : undefined;
    c.set("user", userOf(context, proxied, session?.user));
    await next();
  };
}

/**
 * A session's POST must come from this server's own page: an Origin or Referer of this
 * server, and the page's CSRF token in `x-csrf-token`. A caller with the shared secret is no
 * browser and needs neither.
 */
export function csrfCheck(): MiddlewareHandler<WebEnv> {
  return async (c, next) => {
    const session = c.get("session");
    if (c.req.method === "POST" && !c.get("bySecret") && session) {
      const host = (c.env.incoming.headers.host ?? "").toLowerCase();
      if (!c.req.header("origin") && !(c.req.header("referer") ?? "").startsWith(`http://${host}/`))
        return sendJson(c, 403, { error: "a POST needs an Origin or Referer of this server" });
      if (c.req.header("x-csrf-token") !== session.csrf)
        return sendJson(c, 403, { error: "missing or stale CSRF token: reload the page" });
    }
    await next();
  };
}

/**
 * Under `/api`, a method no route takes is a 404 naming it. Hono answers a HEAD with the GET
 * route; the API routes GET and POST only, so a HEAD is refused here too.
 */
export function apiMethods(): MiddlewareHandler<WebEnv> {
  return async (c, next) => {
    const method = c.req.method;
    if (method === "GET" || method === "POST") return next();
    return sendJson(c, 404, { error: `no API route ${method} ${pathOf(c)}` });
  };
}

/** Past the API and the webhook, only pages are left: any method but GET is a 405. */
export function pagesOnly(): MiddlewareHandler<WebEnv> {
  return async (c, next) => {
    if (c.req.method === "GET") return next();
    return sendJson(c, 405, { error: `${c.req.method} ${pathOf(c)} is not a route` });
  };
}

function userOf(
  context: WebContext,
  proxyValue: string | undefined,
  sessionUser: string | undefined,
): string {
  if (context.trustProxyHeader && typeof proxyValue === "string" && proxyValue.trim() !== "")
    return proxyValue.trim().slice(0, 200);
  return sessionUser ?? context.user;
}
