import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonlEventStore } from "@loopguard/checkpoint";
import type { FreezeStatus, FreezeStore } from "@loopguard/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WebBackend } from "../src/web/backend.js";
import type { WebHandler, WebOptions } from "../src/web/web-server.js";
import { built } from "./cli-helpers.js";
import { loginCookie } from "./web-harness.js";

// The request guards of `loopguard serve`'s web inbox, without a browser: Host, Origin, the
// one-time link, sessions (expiry, sign-out), CSRF, bodies, methods and errors. The built
// handler is used, as the CLI runs it (its pages embed the built client script). The pages
// themselves are driven in Chromium by web-ui.test.ts.
const secret = "web-server-secret-for-tests";
const dir = mkdtempSync(join(tmpdir(), "loopguard-web-server-"));
let clock = 1_000_000;
const reported: string[] = [];
let server: Server;
let handler: WebHandler;
let base = "";
let port = 0;

const backend: WebBackend = {
  kind: "jsonl",
  where: dir,
  store: jsonlEventStore({ dir: join(dir, "runs") }),
  freezeStore: memoryFreezeStore(),
  redact: (value) => value,
  answer: async () => ({ status: "running" }),
  resume: async () => ({ status: "running" }),
  halt: async (runId) => {
    throw new Error(`halting ${runId} broke`);
  },
  close: async () => undefined,
};

/** The kill switch's state in memory (the file and PostgreSQL stores have suites of their own). */
function memoryFreezeStore(): FreezeStore {
  let status: FreezeStatus = { frozen: false };
  return {
    name: "memory",
    status: async () => status,
    freeze: async ({ reason, by }) => {
      status = { frozen: true, reason, ...(by ? { by } : {}), at: Date.now() };
    },
    unfreeze: async () => {
      status = { frozen: false };
    },
  };
}

/** A request through node:http, so the Host header is ours to choose (fetch sends the real one). */
function raw(
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: "127.0.0.1",
        port,
        path,
        method: options.method ?? "GET",
        headers: { host: `127.0.0.1:${port}`, ...options.headers },
        // An empty Host means none at all (node:http would otherwise add the real one).
        ...(options.headers?.host === "" ? { setHost: false } : {}),
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8").on("data", (chunk: string) => {
          text += chunk;
        });
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, text }),
        );
      },
    );
    outgoing.on("error", reject);
    outgoing.end(options.body);
  });
}

async function signIn(): Promise<{ cookie: string; csrf: string }> {
  const cookie = await loginCookie(base, secret);
  const page = await (await fetch(`${base}/fleet`, { headers: { cookie } })).text();
  const csrf = /&quot;csrf&quot;:&quot;([\w-]+)&quot;|"csrf":"([\w-]+)"/.exec(page);
  expect(csrf, "the page embeds its CSRF token").not.toBeNull();
  return { cookie, csrf: (csrf![1] ?? csrf![2])! };
}

beforeAll(async () => {
  if (!built) return;
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
  base = `http://127.0.0.1:${port}`;
  const { createWebHandler } = (await import("../dist/web/web-server.js")) as {
    createWebHandler: (options: WebOptions) => WebHandler;
  };
  handler = createWebHandler({
    backend,
    secret,
    user: "ops",
    host: "127.0.0.1",
    port,
    allowedHosts: ["inbox.example:443"],
    trustProxyHeader: "x-forwarded-user",
    livePollMs: 50,
    now: () => clock,
    onError: (error, where) =>
      reported.push(`${where}: ${error instanceof Error ? error.message : String(error)}`),
  });
  server.on("request", (request, response) => void handler.handle(request, response));
  await handler.ready;
});

afterAll(async () => {
  handler?.close();
  if (server) await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!built)("the web inbox's request guards", () => {
  it("refuses a Host that is not this server's, or none, before anything else", async () => {
    const headers = { "x-loopguard-secret": secret };
    const rebinding = await raw("/api/inbox", {
      headers: { ...headers, host: `evil.example:${port}` },
    });
    expect(rebinding.status).toBe(403);
    expect(JSON.parse(rebinding.text).error).toContain(
      `Host "evil.example:${port}" is not this server's`,
    );
    // The sign-in routes too: a rebinding page cannot read the login form or spend a link.
    expect((await raw("/login", { headers: { host: `evil.example:${port}` } })).status).toBe(403);
    expect((await raw("/api/inbox", { headers: { ...headers, host: "" } })).status).toBe(403);
    expect(
      (await raw("/api/inbox", { headers: { ...headers, host: "inbox.example:443" } })).status,
    ).toBe(200);
    expect(
      (await raw("/api/inbox", { headers: { ...headers, host: `LOCALHOST:${port}` } })).status,
    ).toBe(200);
  });

  it("refuses a cross-origin or opaque-origin request, even one with the secret", async () => {
    const post = (origin: string) =>
      raw("/api/fleet/freeze", {
        method: "POST",
        headers: { "x-loopguard-secret": secret, origin, "content-type": "application/json" },
        body: JSON.stringify({ reason: "cross-origin" }),
      });
    const foreign = await post("http://evil.example");
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.text).error).toBe(
      "cross-origin request from http://evil.example refused",
    );
    const opaque = await post("null");
    expect(opaque.status).toBe(403);
    expect(JSON.parse(opaque.text).error).toBe("requests from an opaque origin are refused");
    expect((await backend.freezeStore.status()).frozen).toBe(false);
    // The allowed names' origins pass.
    expect(
      (
        await raw("/api/fleet", {
          headers: { "x-loopguard-secret": secret, origin: "http://inbox.example:443" },
        })
      ).status,
    ).toBe(200);
  });

  it("spends the one-time link only on its POST, once", async () => {
    const token = new URL(handler.signInUrl).searchParams.get("token")!;
    const previewed = await raw(`/?token=${token}`);
    expect(previewed.status).toBe(200);
    expect(previewed.headers["set-cookie"]).toBeUndefined();
    expect(previewed.text).toContain('action="/login"');
    const wrong = await raw(`/?token=${token}x`);
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain("already used");
    const exchange = () =>
      raw("/login", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
        body: `token=${encodeURIComponent(token)}`,
      });
    const first = await exchange();
    expect(first.status).toBe(303);
    expect(String(first.headers["set-cookie"])).toMatch(
      /^loopguard_session=[\w-]+; HttpOnly; SameSite=Strict; Path=\/; Max-Age=43200$/,
    );
    const second = await exchange();
    expect(second.status).toBe(401);
    expect(second.text).toContain("already used");
    expect((await raw(`/?token=${token}`)).status).toBe(401);
  });

  it("needs a session or the secret; a browser gets the sign-in page, a script a 401 JSON", async () => {
    const api = await raw("/api/inbox");
    expect(api.status).toBe(401);
    expect(JSON.parse(api.text).error).toMatch(/^sign in first/);
    const page = await raw("/runs", { headers: { accept: "text/html" } });
    expect(page.status).toBe(401);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.text).toContain("Sign in to see this page.");
    expect(String(page.headers["content-security-policy"])).toMatch(/script-src 'nonce-[\w+/=]+'/);
    const wrong = await raw("/api/inbox", { headers: { "x-loopguard-secret": `${secret}x` } });
    expect(wrong.status).toBe(401);
    // The login form answers any method but POST.
    expect((await raw("/login")).status).toBe(200);
    const badSecret = await raw("/login", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "secret=nope",
    });
    expect(badSecret.status).toBe(401);
    expect(badSecret.text).toContain("That is not the secret.");
  });

  it("ends a session when it expires and when the person signs out", async () => {
    const { cookie, csrf } = await signIn();
    expect((await raw("/api/inbox", { headers: { cookie } })).status).toBe(200);
    clock += 12 * 60 * 60 * 1000;
    expect((await raw("/api/inbox", { headers: { cookie } })).status).toBe(401);
    const again = await signIn();
    const out = await raw("/logout", {
      method: "POST",
      headers: { cookie: again.cookie, origin: base, "x-csrf-token": again.csrf },
    });
    expect(out.status).toBe(303);
    expect(out.headers.location).toBe("/login");
    expect(String(out.headers["set-cookie"])).toContain("Max-Age=0");
    expect((await raw("/api/inbox", { headers: { cookie: again.cookie } })).status).toBe(401);
    expect(csrf).not.toBe(again.csrf);
  });

  it("takes a session's POST only from this server's page with its CSRF token", async () => {
    const { cookie, csrf } = await signIn();
    const freeze = (headers: Record<string, string>) =>
      raw("/api/fleet/freeze", {
        method: "POST",
        headers: { cookie, "content-type": "application/json", ...headers },
        body: JSON.stringify({ reason: "refunds misbehaving" }),
      });
    const noOrigin = await freeze({ "x-csrf-token": csrf });
    expect(noOrigin.status).toBe(403);
    expect(JSON.parse(noOrigin.text).error).toBe(
      "a POST needs an Origin or Referer of this server",
    );
    const foreignReferer = await freeze({ "x-csrf-token": csrf, referer: "http://evil.example/" });
    expect(foreignReferer.status).toBe(403);
    const stale = await freeze({ origin: base, "x-csrf-token": `${csrf}x` });
    expect(stale.status).toBe(403);
    expect(JSON.parse(stale.text).error).toMatch(/CSRF token/);
    expect((await backend.freezeStore.status()).frozen).toBe(false);
    // The proxy header names who acted.
    const byReferer = await freeze({
      "x-csrf-token": csrf,
      referer: `${base}/fleet`,
      "x-forwarded-user": "kim@example.com",
    });
    expect(byReferer.status).toBe(200);
    expect(JSON.parse(byReferer.text).fleet).toMatchObject({ frozen: true, by: "kim@example.com" });
    const thaw = await raw("/api/fleet/unfreeze", {
      method: "POST",
      headers: { cookie, origin: base, "x-csrf-token": csrf },
    });
    expect(thaw.status).toBe(200);
    expect(JSON.parse(thaw.text).fleet.frozen).toBe(false);
  });

  it("refuses bad bodies, queries, methods and paths with what was wrong", async () => {
    const headers = { "x-loopguard-secret": secret, "content-type": "application/json" };
    const post = (path: string, body: string) => raw(path, { method: "POST", headers, body });
    const big = await post("/api/fleet/freeze", JSON.stringify({ reason: "x".repeat(70_000) }));
    expect(big.status).toBe(413);
    expect(JSON.parse(big.text).error).toBe("the body is over 65536 bytes");
    expect(JSON.parse((await post("/api/fleet/freeze", "{not json")).text).error).toBe(
      "the body must be JSON",
    );
    expect(JSON.parse((await post("/api/fleet/freeze", "[1]")).text).error).toBe(
      "the body must be a JSON object",
    );
    const noReason = await post("/api/fleet/freeze", "{}");
    expect(noReason.status).toBe(400);
    expect(JSON.parse(noReason.text).error).toMatch(/^freezing needs a reason/);
    const limit = await raw("/api/runs?limit=0", { headers });
    expect(limit.status).toBe(400);
    expect(JSON.parse(limit.text).error).toBe("limit must be an integer from 1 to 500");
    const decision = await post(
      "/api/runs/run_0000000000000001/approvals/r1",
      '{"decision":"maybe"}',
    );
    expect(decision.status).toBe(400);
    const noRun = await post(
      "/api/runs/run_0000000000000001/approvals/r1",
      '{"decision":"approve"}',
    );
    expect(noRun.status).toBe(404);
    expect(JSON.parse(noRun.text).error).toBe("run run_0000000000000001 not found");
    const webhook = await post("/runs/run_0000000000000001/approve", '{"decision":"approve"}');
    expect(webhook.status).toBe(400);
    expect(JSON.parse(webhook.text).error).toBe("approver must name the person approving");

    const put = await raw("/api/inbox", { method: "PUT", headers });
    expect(put.status).toBe(404);
    expect(JSON.parse(put.text).error).toBe("no API route PUT /api/inbox");
    expect(JSON.parse((await raw("/api/nothing", { headers })).text).error).toBe(
      "no API route GET /api/nothing",
    );
    expect((await raw("/api/inbox", { method: "HEAD", headers })).status).toBe(404);
    const deleted = await raw("/runs", { method: "DELETE", headers });
    expect(deleted.status).toBe(405);
    expect(JSON.parse(deleted.text).error).toBe("DELETE /runs is not a route");
    expect((await post("/fleet", "{}")).status).toBe(405);
    const missing = await raw("/nowhere", { headers: { "x-loopguard-secret": secret } });
    expect(missing.status).toBe(404);
    expect(missing.text).toContain("no page at /nowhere");
    const missingRun = await raw("/runs/run_0000000000000001", {
      headers: { "x-loopguard-secret": secret },
    });
    expect(missingRun.status).toBe(404);
    expect(missingRun.text).toMatch(/not found: it may have been deleted/);
    expect(
      (
        await raw("/runs/run_0000000000000001/trace.html", {
          headers: { "x-loopguard-secret": secret },
        })
      ).status,
    ).toBe(404);
  });

  it("reports a backend failure and answers 500 with its message", async () => {
    const halted = await raw("/api/runs/run_0000000000000001/halt", {
      method: "POST",
      headers: { "x-loopguard-secret": secret, "content-type": "application/json" },
      body: JSON.stringify({ reason: "stop it" }),
    });
    expect(halted.status).toBe(500);
    expect(JSON.parse(halted.text).error).toBe("halting run_0000000000000001 broke");
    expect(reported).toContain(
      "POST /api/runs/run_0000000000000001/halt: halting run_0000000000000001 broke",
    );
  });

  it("the live feed says change when the fleet is frozen and ends when the server closes", async () => {
    const abort = new AbortController();
    const response = await fetch(`${base}/api/live?since=`, {
      headers: { "x-loopguard-secret": secret },
      signal: abort.signal,
    });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let seen = "";
    while (!seen.includes("event: change")) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += decoder.decode(value);
    }
    // The page rendered no state (since is empty): the current one is announced at once.
    expect(seen).toMatch(/^: live\n\nevent: change\ndata: \{\}\n\n/);
    abort.abort();
  });
});
