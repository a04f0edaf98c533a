// The web inbox with many runs in the store: how long the first paint of the inbox takes.
//
//   pnpm --filter loopguard build && node apps/demo/bench/inbox.mjs [runs] [awaiting]
//
// Writes `runs` runs (default 10,000; `awaiting` of them parked on an approval, default 50) into
// a JSONL runs directory through the real store, starts `loopguard serve` on it, signs in from
// the printed URL in headless Chromium and reports, over 5 loads each: the server's time for
// the inbox page and the browser's first contentful paint; the same for the run list's first
// page; and the page script's size, raw and gzipped. Prints figures; asserts nothing.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { jsonlEventStore } from "@loopguard/checkpoint";
import { chromium } from "playwright-core";

const total = Number(process.argv[2] ?? 10_000);
const awaiting = Number(process.argv[3] ?? 50);
const cli = resolve(import.meta.dirname, "../dist/cli.js");
const dir = mkdtempSync(join(tmpdir(), "loopguard-inbox-bench-"));
const runs = join(dir, "runs");

const store = jsonlEventStore({ dir: runs });
const started = Date.now();
let next = 0;
const at = Date.now() - total * 1000;
async function writer() {
  while (next < total) {
    const index = next++;
    const runId = `run_${index.toString(16).padStart(16, "0")}`;
    const t = at + index * 1000;
    const events = [
      {
        type: "run-start",
        runId,
        agentId: "support-desk",
        task: `Order A${1000 + (index % 9000)} arrived broken, refund please`,
        model: "claude-sonnet-5-5",
        maxTokens: 1024,
        budget: { maxUsd: 0.5 },
        policyDigest: "bench",
        toolDigest: "bench",
        at: t,
      },
      {
        type: "model-request",
        step: 1,
        maxTokens: 1024,
        estimateUsd: 0.01,
        requestDigest: "x",
        at: t + 1,
      },
      {
        type: "model-response",
        step: 1,
        response: {
          id: "m",
          type: "message",
          role: "assistant",
          model: "claude-sonnet-5-5",
          content: [
            {
              type: "tool_use",
              id: `tu_${index}`,
              name: "issue_refund",
              input: { order_id: `A${1000 + (index % 9000)}`, amount: 649, reason: "damaged" },
            },
          ],
          stop_reason: "tool_use",
          stop_sequence: null,
          usage: { input_tokens: 500, output_tokens: 60 },
        },
        costUsd: 0.0016,
        latencyMs: 300,
        attempts: 1,
        at: t + 2,
      },
    ];
    if (index >= total - awaiting) {
      events.push({
        type: "approval-request",
        step: 1,
        requestId: `ar_${index}`,
        toolUseId: `tu_${index}`,
        tool: "issue_refund",
        argsDigest: "sha256:bench",
        policyDigest: "bench",
        reason: "policy_ask",
        message: 'A person must approve issue_refund when "amount" is more than 500.',
        expiresAt: Date.now() + 86_400_000,
        at: t + 3,
      });
    } else {
      events.push({
        type: "run-end",
        status: "completed",
        answer: "Refunded.",
        why: "end_turn",
        at: t + 3,
      });
    }
    await store.append(runId, events, { expectedSeq: 0 });
  }
}
await Promise.all(Array.from({ length: 64 }, writer));
await store.close?.();
console.log(
  `wrote ${total} runs (${awaiting} awaiting approval) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);

const secret = "bench-secret-0123456789";
const child = spawn(process.execPath, [cli, "serve", "--port", "0", "--dir", runs], {
  env: { ...process.env, LOOPGUARD_WEBHOOK_SECRET: secret, NO_COLOR: "1" },
  stdio: ["ignore", "pipe", "inherit"],
});
const signIn = await new Promise((done, fail) => {
  let text = "";
  child.stdout.on("data", (chunk) => {
    text += chunk;
    const match = /^(http:\/\/\S+\?token=\S+)$/m.exec(text);
    if (match) done(match[1]);
  });
  child.on("exit", () => fail(new Error(`serve exited: ${text}`)));
});
const base = new URL(signIn).origin;

const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
if (!existsSync(chromiumPath)) throw new Error(`no Chromium at ${chromiumPath}`);
const browser = await chromium.launch({
  executablePath: chromiumPath,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
const page = await browser.newPage();
await page.goto(signIn);
const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join("; ");

const p50 = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
async function measure(path, ready) {
  const server = [];
  const paint = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const response = await fetch(`${base}${path}`, { headers: { cookie } });
    await response.text();
    server.push(performance.now() - t0);
    await page.goto(`${base}${path}`);
    await page.waitForSelector(ready);
    paint.push(
      await page.evaluate(
        () => performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? Number.NaN,
      ),
    );
  }
  return { server: p50(server), paint: p50(paint) };
}
const inbox = await measure("/", "article.approval");
const list = await measure("/runs", "table tbody tr");
const script = readFileSync(resolve(import.meta.dirname, "../dist/web/client.js"));
console.log(
  `\n| ${total.toLocaleString("en")} runs, ${awaiting} awaiting | server, p50 of 5 | first contentful paint, p50 of 5 |`,
);
console.log("|---|---|---|");
console.log(`| inbox (/) | ${inbox.server.toFixed(0)} ms | ${inbox.paint.toFixed(0)} ms |`);
console.log(
  `| run list, first page (/runs) | ${list.server.toFixed(0)} ms | ${list.paint.toFixed(0)} ms |`,
);
console.log(
  `\npage script: ${(script.length / 1024).toFixed(1)} KB, ${(gzipSync(script).length / 1024).toFixed(1)} KB gzipped`,
);
await browser.close();
child.kill("SIGTERM");
if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
else console.log(`kept ${runs}`);
