import type { Context, Hono } from "hono";
import { readText, seeOther, sendHtml } from "./http-replies.js";
import { escapeHtml, plainPage } from "./page.js";
import { sessionCookie } from "./session.js";
import type { WebContext, WebEnv } from "./web-context.js";

/**
 * The routes that sign a browser in, before any session is needed: the printed one-time link
 * (`GET /?token=...`) and `/login` (the token or the shared secret, posted).
 *
 * A GET of the printed link does not spend the token (a link previewer, a prefetch or a
 * scanner would use it up): the page posts it to `/login`, which does.
 */
export function signInRoutes(app: Hono<WebEnv>, context: WebContext): void {
  const { sessions } = context;
  app.get("/", async (c, next) => {
    if (c.req.method !== "GET" || c.req.query("token") === undefined) return next();
    const token = c.req.query("token") ?? "";
    if (!sessions.isLoginToken(token)) return usedLink(c);
    const nonce = c.get("nonce");
    // referrer-policy stays same-origin: no-referrer would make the browser send Origin: null
    // with the POST, which this server refuses.
    return sendHtml(
      c,
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
    );
  });
  app.post("/login", async (c) => {
    const form = new URLSearchParams(await readText(c));
    if (form.has("token")) {
      const byToken = sessions.exchange(form.get("token") ?? "");
      if (!byToken) return usedLink(c);
      return seeOther(c, "/", {
        "set-cookie": sessions.cookie(byToken, false),
        "cache-control": "no-store",
      });
    }
    const session = sessions.signInWithSecret(form.get("secret") ?? "");
    if (!session)
      return sendHtml(
        c,
        401,
        plainPage("Sign in", loginForm("That is not the secret."), c.get("nonce")),
      );
    return seeOther(c, "/", {
      "set-cookie": sessions.cookie(session, false),
      "cache-control": "no-store",
    });
  });
  app.all("/login", (c) => sendHtml(c, 200, plainPage("Sign in", loginForm(), c.get("nonce"))));
}

/** `POST /logout`: ends the session and clears its cookie (after the CSRF check). */
export function signOutRoute(app: Hono<WebEnv>, context: WebContext): void {
  app.post("/logout", (c) => {
    const session = c.get("session");
    if (session) context.sessions.end(session);
    return seeOther(c, "/login", {
      "set-cookie": `${sessionCookie}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`,
    });
  });
}

/** The sign-in form: the shared secret, or the printed link. */
export function loginForm(message?: string): string {
  return `<h1>Sign in</h1>
${message ? `<p role="alert">${escapeHtml(message)}</p>` : ""}
<p>Open the link <code>loopguard serve</code> printed on its first line, or enter the shared secret (<code>LOOPGUARD_WEBHOOK_SECRET</code>).</p>
<form class="login" method="post" action="/login">
<label for="secret">Shared secret</label>
<input id="secret" name="secret" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`;
}

/** The answer to a spent or wrong sign-in link: 401, and how to sign in instead. */
function usedLink(c: Context<WebEnv>): Response {
  return sendHtml(
    c,
    401,
    plainPage(
      "Sign in",
      `<h1>This sign-in link was already used</h1><p>Each printed link works once. <a href="/login">Sign in with the shared secret</a> or restart <code>loopguard serve</code> for a new link.</p>`,
      c.get("nonce"),
    ),
  );
}
