import { Hono } from "hono";
import { apiRoutes } from "./api-routes.js";
import { HttpError } from "./http-error.js";
import { fail, pathOf } from "./http-replies.js";
import { pageRoutes } from "./page-routes.js";
import { csrfCheck, hostAndOrigin, pagesOnly, readyFirst, signedIn } from "./request-guards.js";
import { signInRoutes, signOutRoute } from "./sign-in-routes.js";
import type { WebContext, WebEnv } from "./web-context.js";
import { webhookRoute } from "./webhook-route.js";

/**
 * The web inbox's route table, in the order a request meets it:
 *
 * 1. every request: wait for the run index, a CSP nonce, the Host and Origin checks;
 * 2. sign-in, before any session: `GET /?token=`, `/login`;
 * 3. a session or the shared secret from here on, and a session's POST carries its CSRF token;
 * 4. `POST /logout`, the JSON API under `/api`, the webhook `POST /runs/:id/approve`;
 * 5. pages, GET only: `/`, `/fleet`, `/runs`, `/runs/:id`, `/runs/:id/trace.html`.
 *
 * A refusal thrown as `HttpError` becomes its status; anything else is reported and a 500.
 */
export function webApp(context: WebContext): Hono<WebEnv> {
  const app = new Hono<WebEnv>();
  app.use(readyFirst(context));
  app.use(hostAndOrigin(context));
  signInRoutes(app, context);
  app.use(signedIn(context));
  app.use(csrfCheck());
  signOutRoute(app, context);
  apiRoutes(app, context);
  webhookRoute(app, context);
  app.use(pagesOnly());
  pageRoutes(app, context);
  app.notFound((c) => fail(c, 404, `no page at ${pathOf(c)}`));
  app.onError((error, c) => {
    if (error instanceof HttpError) return fail(c, error.status, error.message);
    context.report(error, `${c.req.method} ${pathOf(c)}`);
    return fail(c, 500, error instanceof Error ? error.message : String(error));
  });
  return app;
}
