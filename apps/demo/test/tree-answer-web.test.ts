import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonlEventStore } from "@loopguard/checkpoint";
import { type EventStore, memoryEventStore } from "@loopguard/core";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WebBackend } from "../src/web/backend.js";
import { chromiumPath, eventually, hasChromium, launchChromium } from "./browser.js";
import { built } from "./cli-helpers.js";
import { neverFrozen, type ServedWeb, serveWeb, signedInContext } from "./web-harness.js";

// An approval asked inside a delegated run, answered from the web inbox of the server that
// runs the tree's root agent: the card offers the buttons, one click records the answer in the
// child and the whole tree completes, the child's tool acting once. Beside it, `answersTree`
// refuses trees whose root another agent (another policy digest) started.
if (!hasChromium && process.env.CI)
  throw new Error(`[loopguard] CI is set but Chromium is missing at ${chromiumPath}`);

const secret = "tree-answer-web-secret-for-tests";
const dir = mkdtempSync(join(tmpdir(), "loopguard-tree-answer-web-"));
let web: ServedWeb;
let browser: Browser;
let store: EventStore;
let fixture: typeof import("../src/trace/__fixtures__/delegation-tree.js");
let tree: ReturnType<typeof fixture.parkedTreeAgents>;
const lines: string[] = [];

beforeAll(async () => {
  if (!built || !hasChromium) return;
  fixture = await import("../src/trace/__fixtures__/delegation-tree.js");
  store = jsonlEventStore({ dir: join(dir, "runs") });
  tree = fixture.parkedTreeAgents(store);
  await tree.park();
  const { localBackend } = (await import("../dist/web/local-backend.js")) as {
    localBackend: (parts: Record<string, unknown>) => WebBackend;
  };
  const backend = localBackend({
    where: dir,
    store,
    freezeStore: neverFrozen,
    redact: (value: unknown) => value,
    policyDigest: tree.triage.policyDigest,
    agentFor: async () => tree.triage,
    out: (line: string) => lines.push(line),
  });
  web = await serveWeb(backend, secret);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await web?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!built || !hasChromium)("answering a delegated approval from the inbox", () => {
  it("offers the buttons when this server runs the root agent, and one approval completes the tree", {
    timeout: 120_000,
  }, async () => {
    const base = web.base;
    const context = await signedInContext(browser, base, secret);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));

    await page.goto(`${base}/`);
    const cards = page.locator("article.approval");
    await expect.poll(() => cards.count()).toBe(1);
    const card = cards.first();
    expect(await card.getAttribute("data-run")).toBe(fixture.parkedChildRunId);
    expect(await card.getAttribute("class")).toContain("pending");
    expect(await card.locator(".chain-runs li").count()).toBe(2);
    expect(tree.refunds).toEqual([]);

    await card.getByRole("button", { name: "Approve" }).click();
    await eventually(
      async () => (await store.list()).find((row) => row.runId === fixture.parkedRootRunId)?.status,
      {
        timeout: 120_000,
      },
    ).toBe("completed");
    const child = (await store.list()).find((row) => row.runId === fixture.parkedChildRunId);
    expect(child?.status).toBe("completed");
    // The refund ran once, in the child, after the person's answer.
    expect(tree.refunds).toEqual([{ order_id: "A1002", amount: 649 }]);
    const decisions = (await store.read(fixture.parkedChildRunId)).filter(
      (event) => event.type === "approval-decision",
    );
    expect(decisions.map((event) => [event.decision, event.approver])).toEqual([
      ["approve", "ops"],
    ]);
    // Answering again is refused: the request is no longer pending.
    await page.goto(`${base}/`);
    await expect.poll(() => page.locator("article.approval").count()).toBe(0);
    expect(lines).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});

describe.skipIf(!built)("answersTree", () => {
  it("answers only trees whose root the served agent started", async () => {
    const { answersTree } = (await import("../dist/web/tree-answer.js")) as {
      answersTree: (backend: WebBackend, rootRunId: string) => Promise<boolean>;
    };
    const fixtureModule = await import("../src/trace/__fixtures__/delegation-tree.js");
    const memory = memoryEventStore();
    const agents = fixtureModule.parkedTreeAgents(memory);
    await agents.park();
    const backendWith = (policyDigest: string | undefined) =>
      ({ store: memory, ...(policyDigest ? { policyDigest } : {}) }) as unknown as WebBackend;
    const root = fixtureModule.parkedRootRunId;
    expect(await answersTree(backendWith(agents.triage.policyDigest), root)).toBe(true);
    // Another agent's server (another policy), a server that states no policy, a child taken
    // for a root, and a run that does not exist: not answered here.
    expect(await answersTree(backendWith(`${agents.triage.policyDigest}x`), root)).toBe(false);
    expect(await answersTree(backendWith(undefined), root)).toBe(false);
    expect(
      await answersTree(backendWith(agents.triage.policyDigest), fixtureModule.parkedChildRunId),
    ).toBe(false);
    expect(await answersTree(backendWith(agents.triage.policyDigest), "run_nope")).toBe(false);
  });
});
