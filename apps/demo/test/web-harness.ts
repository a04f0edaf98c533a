import { createServer } from "node:http";
import type { Browser, BrowserContext } from "playwright-core";
import { expect } from "vitest";
import type { WebBackend } from "../src/web/backend.js";
import type { WebHandler, WebOptions } from "../src/web/web-server.js";

/** A web server on a loopback port serving `backend` (the built handler), and how to stop it. */
export interface ServedWeb {
  base: string;
  port: number;
  handler: WebHandler;
  close(): Promise<void>;
}

/**
 * Starts the built web handler on 127.0.0.1 for `backend`, signed in by `secret` as "ops";
 * `options` adds or overrides handler options (they may need the port: a function gets it).
 */
export async function serveWeb(
  backend: WebBackend,
  secret: string,
  options: (port: number) => Partial<WebOptions> = () => ({}),
): Promise<ServedWeb> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const { createWebHandler } = (await import("../dist/web/web-server.js")) as {
    createWebHandler: (options: WebOptions) => WebHandler;
  };
  const handler = createWebHandler({
    backend,
    secret,
    user: "ops",
    host: "127.0.0.1",
    port,
    ...options(port),
  });
  server.on("request", (request, response) => void handler.handle(request, response));
  await handler.ready;
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    handler,
    async close() {
      handler.close();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Signs in with the shared secret; the session cookie as `name=value`. */
export async function loginCookie(base: string, secret: string): Promise<string> {
  const login = await fetch(`${base}/login`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
    body: `secret=${encodeURIComponent(secret)}`,
    redirect: "manual",
  });
  expect(login.status).toBe(303);
  return login.headers.get("set-cookie")!.split(";")[0]!;
}

/** A Chromium context signed in to the server at `base`. */
export async function signedInContext(
  browser: Browser,
  base: string,
  secret: string,
): Promise<BrowserContext> {
  const [name, value] = (await loginCookie(base, secret)).split("=");
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addCookies([{ name: name!, value: value!, url: base }]);
  return context;
}

/** A freeze store that is never frozen and forgets what it is told (pages that do not test it). */
export const neverFrozen = {
  name: "memory",
  status: async () => ({ frozen: false }),
  freeze: async () => undefined,
  unfreeze: async () => undefined,
};
