import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonlEventStore } from "@loopguard/checkpoint";
import type { EventStore, StoredEvent, StoredEventInput } from "@loopguard/core";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WebBackend } from "../src/web/backend.js";
import { chromiumPath, hasChromium, launchChromium } from "./browser.js";
import { built } from "./cli-helpers.js";
import { neverFrozen, type ServedWeb, serveWeb, signedInContext } from "./web-harness.js";

// The web run page of a delegation tree in Chromium: a parent lists the runs it delegated to
// with links, a child links back to its parent, and the framed trace nests the child runs.
if (!hasChromium && process.env.CI)
  throw new Error(`[loopguard] CI is set but Chromium is missing at ${chromiumPath}`);

const secret = "run-tree-web-secret-for-tests";
const dir = mkdtempSync(join(tmpdir(), "loopguard-run-tree-web-"));
let web: ServedWeb;
let base = "";
let browser: Browser;

/** The tree served: three runs, each linked to the next. */
interface ServedTree {
  rootRunId: string;
  childRunId: string;
  grandchildRunId: string;
  logs: Map<string, StoredEvent[]>;
}

async function writeLogs(store: EventStore, logs: Map<string, StoredEvent[]>): Promise<void> {
  for (const [runId, events] of logs) {
    const input = events.map(({ seq: _seq, ...event }) => event as StoredEventInput);
    await store.append(runId, input, { expectedSeq: 0 });
  }
}

let tree: ServedTree;
let parked: { root: string; child: string };

beforeAll(async () => {
  if (!built || !hasChromium) return;
  const fixture = await import("../src/trace/__fixtures__/delegation-tree.js");
  tree = {
    rootRunId: fixture.rootRunId,
    childRunId: fixture.childRunId,
    grandchildRunId: fixture.grandchildRunId,
    logs: await fixture.delegationTree(),
  };
  const store = jsonlEventStore({ dir: join(dir, "runs") });
  await writeLogs(store, tree.logs);
  await fixture.parkedTree(store);
  parked = { root: fixture.parkedRootRunId, child: fixture.parkedChildRunId };
  const backend: WebBackend = {
    kind: "jsonl",
    where: dir,
    store,
    freezeStore: neverFrozen,
    redact: (value) => value,
    answer: async () => ({ status: "running" }),
    resume: async () => ({ status: "running" }),
    halt: async () => ({ status: "halted" }),
    close: async () => undefined,
  };
  web = await serveWeb(backend, secret);
  base = web.base;
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await web?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!built || !hasChromium)("a delegation tree on the web run page", () => {
  it("lists the children with links, links a child to its parent, and nests runs in the trace", {
    timeout: 120_000,
  }, async () => {
    const context = await signedInContext(browser, base, secret);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });

    await page.goto(`${base}/runs/${tree.rootRunId}`);
    const rows = page.locator("table.child-runs tbody tr");
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.first().locator("td").allTextContents()).toEqual([
      tree.childRunId,
      "ask_researcher",
      "researcher",
      expect.stringContaining("completed"),
      expect.stringMatching(/^\$\d/),
    ]);
    expect(await page.locator(".parent-run").count()).toBe(0);
    // The parent's cost holds what its children spent.
    expect(await page.locator("dl.facts").textContent()).toMatch(
      /of it spent by the runs it delegated to/,
    );
    // The framed trace holds the whole tree: three runs, the child nested under the call.
    const frame = page.frameLocator("iframe.trace");
    await expect.poll(() => frame.locator('.row[data-kind="run"]').count()).toBe(3);
    expect(await frame.locator("#runs .child-runs a").allTextContents()).toEqual([
      tree.childRunId,
      tree.grandchildRunId,
    ]);

    // The run list says which runs were delegated, and by whom.
    await page.goto(`${base}/runs`);
    const childRow = page.locator(`tr:has(a[href="/runs/${tree.childRunId}"]) .child-of a`);
    await expect.poll(() => childRow.first().textContent()).toBe(tree.rootRunId);
    await page.goto(`${base}/runs/${tree.rootRunId}`);
    await expect.poll(() => rows.count()).toBe(1);
    await expect.poll(() => frame.locator('.row[data-kind="run"]').count()).toBe(3);
    const reports = join(import.meta.dirname, "../reports");
    mkdirSync(reports, { recursive: true });
    await page.screenshot({ path: join(reports, "run-tree.png"), fullPage: true });

    // The child's page: its parent, and its own child.
    await rows.first().locator("a").click();
    await page.waitForURL(`${base}/runs/${tree.childRunId}`);
    const up = page.locator(".parent-run a");
    await expect.poll(() => up.textContent()).toBe(tree.rootRunId);
    expect(await page.locator(".parent-run").textContent()).toContain("ask_researcher");
    expect(await page.locator("table.child-runs tbody tr a").allTextContents()).toEqual([
      tree.grandchildRunId,
    ]);
    // A link inside the framed trace opens the other run's page in the whole window.
    await frame.locator("#runs .parent-run a").click();
    await page.waitForURL(`${base}/runs/${tree.rootRunId}`);
    expect(problems).toEqual([]);
    await context.close();
  });

  it("shows an approval asked inside a child once, with the chain of runs above it", {
    timeout: 120_000,
  }, async () => {
    const context = await signedIn();
    const page = await context.newPage();
    await page.goto(`${base}/`);
    const cards = page.locator("article.approval");
    await expect.poll(() => cards.count()).toBe(1);
    const card = cards.first();
    expect(await card.getAttribute("data-run")).toBe(parked.child);
    // One request waits, though two runs are parked on it.
    const count = page.locator('header nav a[href="/"] .count');
    expect(await count.textContent()).toBe("1");
    expect(await card.locator(".chain-runs li").allTextContents()).toEqual([
      "triage: The espresso grinder A1002 arrived smashed. → called ask_refunds",
      "refunds: Refund order A1002 in full ($649).",
    ]);
    expect(await card.locator(".chain-runs li a").first().getAttribute("href")).toBe(
      `/runs/${parked.root}`,
    );
    // This server does not run the tree's agents: it says where to answer instead of offering
    // buttons that could not resume the tree.
    expect(await card.locator("button").count()).toBe(0);
    expect(await card.locator(".why-not").textContent()).toContain(
      `Delegated: asked inside run ${parked.child}, which run ${parked.root} started through its tool ask_refunds: answer it where the tree's root agent runs, with agent.approve("${parked.root}", answer)`,
    );
    // And the API refuses an answer sent anyway, saying where to answer.
    const refused = await page.evaluate(
      async ({ runId, boot }) => {
        const csrf = (JSON.parse(boot) as { csrf: string }).csrf;
        const pending = (await (await fetch("/api/inbox")).json()) as {
          pending: Array<{ runId: string; requestId: string }>;
        };
        const item = pending.pending.find((entry) => entry.runId === runId)!;
        const response = await fetch(
          `/api/runs/${encodeURIComponent(runId)}/approvals/${encodeURIComponent(item.requestId)}`,
          {
            method: "POST",
            headers: { "content-type": "application/json", "x-csrf-token": csrf },
            body: JSON.stringify({ decision: "approve" }),
          },
        );
        return { status: response.status, body: (await response.json()) as { error: string } };
      },
      { runId: parked.child, boot: (await page.locator("#boot").textContent()) ?? "{}" },
    );
    expect(refused.status).toBe(409);
    expect(refused.body.error).toContain(`agent.approve("${parked.root}", answer)`);
    // The parent's page says it waits with its child.
    await page.goto(`${base}/runs/${parked.root}`);
    const row = page.locator("table.child-runs tbody tr");
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.locator("td").nth(3).textContent()).toContain("awaiting approval");
    expect(await page.locator("dl.facts").textContent()).toContain("awaiting approval");
    expect(await count.textContent()).toBe("1");
    await context.close();
  });
});

/** A browser context signed in with the shared secret. */
function signedIn() {
  return signedInContext(browser, base, secret);
}
