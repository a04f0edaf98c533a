import type { Context } from "hono";
import { HttpError } from "./http-error.js";
import { escapeHtml, plainPage } from "./page.js";
import type { WebEnv } from "./web-context.js";

/** The largest request body read (64 KiB): answers, reasons and sign-in forms are small. */
export const maxBody = 64 * 1024;

type Headers = Record<string, string>;

/** A JSON reply, never cached or sniffed. */
export function sendJson(
  c: Context<WebEnv>,
  status: number,
  body: unknown,
  headers: Headers = {},
): Response {
  return c.body(`${JSON.stringify(body)}\n`, status as 200, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    ...headers,
  });
}

/** An HTML page under a strict CSP: only this response's nonce runs scripts and styles. */
export function sendHtml(c: Context<WebEnv>, status: number, text: string): Response {
  const nonce = c.get("nonce");
  return c.body(text, status as 200, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; frame-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  });
}

/** A redirect after a form (sign-in, sign-out). */
export function seeOther(c: Context<WebEnv>, location: string, headers: Headers): Response {
  return c.body(null, 303, { location, ...headers });
}

/**
 * A refusal: an HTML page to a browser's GET of a page, JSON to the API, to scripts and to
 * anything but a GET.
 */
export function fail(c: Context<WebEnv>, status: number, message: string): Response {
  const path = pathOf(c);
  const wantsHtml =
    !path.startsWith("/api/") && !(c.req.header("accept") ?? "").includes("application/json");
  if (!wantsHtml || c.req.method !== "GET") return sendJson(c, status, { error: message });
  return sendHtml(
    c,
    status,
    plainPage(String(status), `<h1>${status}</h1><p>${escapeHtml(message)}</p>`, c.get("nonce")),
  );
}

/** The request's path as sent (not percent-decoded), for messages. */
export function pathOf(c: Context<WebEnv>): string {
  return new URL(c.req.url).pathname;
}

/** The request body as text; over `maxBody` bytes is a 413. */
export async function readText(c: Context<WebEnv>): Promise<string> {
  const body = c.req.raw.body;
  if (!body) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBody) {
      await reader.cancel().catch(() => undefined);
      throw new HttpError(413, `the body is over ${maxBody} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The request body as a JSON object (an empty body is `{}`); anything else is a 400. */
export async function readJson(c: Context<WebEnv>): Promise<Record<string, unknown>> {
  const text = await readText(c);
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
