import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { StoredEvent } from "@loopguard/core";
import { beforeAll, describe, expect, it } from "vitest";
import { chromiumPath, hasChromium, launchChromium } from "../../test/browser.js";
import { runLinksOf } from "../run-links.js";
import {
  childRunId,
  delegationTree,
  grandchildRunId,
  rootRunId,
} from "./__fixtures__/delegation-tree.js";
import { buildTraceTree, renderTraceHtml, traceView } from "./index.js";

const inCi = Boolean(process.env.CI);
let logs: Map<string, StoredEvent[]>;
const read = async (runId: string) => logs.get(runId) ?? [];

beforeAll(async () => {
  logs = await delegationTree();
});

describe("runLinksOf", () => {
  it("reads the parent of a child run and the children a run started", () => {
    const root = runLinksOf(logs.get(rootRunId)!);
    expect(root.parent).toBeUndefined();
    expect(root.children).toEqual([
      expect.objectContaining({
        runId: childRunId,
        callId: "toolu_r1",
        tool: "ask_researcher",
        agentId: "researcher",
        status: "completed",
        steps: 2,
      }),
    ]);
    expect(root.children[0]!.costUsd).toBeGreaterThan(0);
    const child = runLinksOf(logs.get(childRunId)!);
    expect(child.parent).toEqual({
      runId: rootRunId,
      callId: "toolu_r1",
      tool: "ask_researcher",
      depth: 1,
      rootRunId,
    });
    expect(child.children.map((item) => item.runId)).toEqual([grandchildRunId]);
  });

  it("leaves a child running while its parent's log has no end for it, and skips malformed links", () => {
    const log = logs.get(rootRunId)!.filter((event) => event.type !== ("child-run-end" as string));
    const malformed = [
      ...log,
      { type: "child-run-start", childRunId: 42 } as unknown as StoredEvent,
      {
        type: "child-run-end",
        childRunId: "run_unknown",
        status: "failed",
      } as unknown as StoredEvent,
    ];
    expect(runLinksOf(malformed).children).toEqual([
      expect.objectContaining({ runId: childRunId, status: "running" }),
    ]);
  });

  it("shows a parked child as waiting, running again when its parent resumes it, then ended", () => {
    const start = { type: "child-run-start", callId: "c", tool: "t", childRunId: "k" };
    const wait = {
      type: "child-run-wait",
      callId: "c",
      childRunId: "k",
      status: "awaiting_approval",
    };
    const end = {
      type: "child-run-end",
      callId: "c",
      childRunId: "k",
      status: "completed",
      trust: "untrusted",
    };
    const statusAfter = (...events: object[]) =>
      runLinksOf(events as unknown as StoredEvent[]).children[0]!.status;
    expect(statusAfter(start, wait)).toBe("awaiting_approval");
    expect(statusAfter(start, wait, start)).toBe("running");
    expect(statusAfter(start, wait, start, end)).toBe("completed");
    expect(statusAfter(start, end, wait, start)).toBe("completed");
    expect(runLinksOf([start, end] as unknown as StoredEvent[]).children[0]!.trust).toBe(
      "untrusted",
    );
  });
});

describe("buildTraceTree", () => {
  it("nests each child's run under the parent's execute_tool span that started it", async () => {
    const trace = await buildTraceTree(read, rootRunId);
    const runs = trace.spans.filter((span) => span.kind === "run");
    expect(runs.map((span) => span.attributes["loopguard.run_id"])).toEqual([
      rootRunId,
      childRunId,
      grandchildRunId,
    ]);
    const callOf = (callId: string) =>
      trace.spans.find(
        (span) => span.kind === "tool" && span.attributes["loopguard.tool.call_id"] === callId,
      )!;
    expect(runs[1]!.parentSpanId).toBe(callOf("toolu_r1").spanId);
    expect(runs[2]!.parentSpanId).toBe(callOf("toolu_c1").spanId);
    const rows = traceView(trace.spans).rows;
    const depthOf = (runId: string) =>
      rows.find((row) => row.kind === "run" && row.attributes["loopguard.run_id"] === runId)!.depth;
    // run > step > execute_tool > child run > step > execute_tool > grandchild run
    expect([depthOf(rootRunId), depthOf(childRunId), depthOf(grandchildRunId)]).toEqual([0, 3, 6]);
    expect(rows.filter((row) => row.depth === 0)).toHaveLength(1);
    expect(trace.meta.children).toEqual([
      expect.objectContaining({ runId: childRunId, level: 1, status: "completed" }),
      expect.objectContaining({ runId: grandchildRunId, level: 2, status: "completed" }),
    ]);
    expect(trace.meta.children![0]!.href).toBe(`../${childRunId}/trace.html`);
    expect(trace.meta.parent).toBeUndefined();
    // The tree's cost is every run's model calls.
    const total = [...logs.values()]
      .flat()
      .reduce((sum, event) => sum + (event.type === "model-response" ? event.costUsd : 0), 0);
    expect(traceView(trace.spans).totals.costUsd).toBeCloseTo(total, 10);
  });

  it("hangs a child whose own log names no parent under the call its parent's log names", async () => {
    const unlinked = async (runId: string) => {
      const events = logs.get(runId) ?? [];
      if (runId !== childRunId) return events;
      const [start, ...rest] = events;
      const { parent: _parent, ...bare } = start as StoredEvent & { parent?: unknown };
      return [bare as StoredEvent, ...rest];
    };
    const trace = await buildTraceTree(unlinked, rootRunId);
    const childSpan = trace.spans.find(
      (span) => span.kind === "run" && span.attributes["loopguard.run_id"] === childRunId,
    )!;
    const call = trace.spans.find(
      (span) => span.kind === "tool" && span.attributes["loopguard.tool.call_id"] === "toolu_r1",
    )!;
    expect(childSpan.parentSpanId).toBe(call.spanId);
    expect(traceView(trace.spans).rows.filter((row) => row.depth === 0)).toHaveLength(1);
  });

  it("links a child's page to its parent, lists a missing child, and caps the runs read", async () => {
    const child = await buildTraceTree(read, childRunId, { href: (id) => `/runs/${id}` });
    expect(child.meta.parent).toEqual({ runId: rootRunId, href: `/runs/${rootRunId}` });
    expect(child.meta.children!.map((item) => item.runId)).toEqual([grandchildRunId]);
    const gone = await buildTraceTree(
      async (runId) => (runId === grandchildRunId ? [] : (logs.get(runId) ?? [])),
      rootRunId,
    );
    expect(gone.meta.children!.at(-1)).toMatchObject({
      runId: grandchildRunId,
      status: "missing",
    });
    const capped = await buildTraceTree(read, rootRunId, { maxRuns: 2 });
    expect(capped.truncated).toBe(1);
    await expect(buildTraceTree(read, rootRunId, { maxRuns: 0 })).rejects.toThrow(/maxRuns/);
    await expect(buildTraceTree(read, "")).rejects.toThrow(/runId/);
  });
});

describe.skipIf(!hasChromium && !inCi)(
  "a delegation tree's trace.html in headless Chromium",
  () => {
    it("shows nested runs and links parent and child pages", { timeout: 60_000 }, async () => {
      if (!hasChromium)
        throw new Error(`[loopguard] CI is set but Chromium is missing at ${chromiumPath}`);
      const dir = await mkdtemp(join(tmpdir(), "loopguard-trace-tree-"));
      const browser = await launchChromium();
      try {
        for (const runId of logs.keys()) {
          const trace = await buildTraceTree(read, runId);
          await mkdir(join(dir, runId), { recursive: true });
          await writeFile(join(dir, runId, "trace.html"), renderTraceHtml(trace.spans, trace.meta));
        }
        const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
        const problems: string[] = [];
        page.on("pageerror", (error) => problems.push(error.message));
        page.on("console", (message) => {
          if (message.type() === "error") problems.push(message.text());
        });
        await page.goto(pathToFileURL(join(dir, rootRunId, "trace.html")).href);
        // Every run of the tree is in the one tree, the child under the parent's call.
        const runRows = page.locator('.row[data-kind="run"]');
        await expect.poll(() => runRows.count()).toBe(3);
        expect(
          await runRows.evaluateAll((rows) => rows.map((row) => row.getAttribute("aria-level"))),
        ).toEqual(["1", "4", "7"]);
        const links = page.locator("#runs .child-runs a");
        expect(await links.allTextContents()).toEqual([childRunId, grandchildRunId]);
        expect(await page.locator("#runs .parent-run").count()).toBe(0);
        // Follow the link to the child: its page links back up to the root.
        await links.first().click();
        await page.waitForURL((url) => url.pathname.endsWith(`/${childRunId}/trace.html`));
        const up = page.locator("#runs .parent-run a");
        expect(await up.textContent()).toBe(rootRunId);
        expect(await page.locator('.row[data-kind="run"]').count()).toBe(2);
        await up.click();
        await page.waitForURL((url) => url.pathname.endsWith(`/${rootRunId}/trace.html`));
        expect(problems).toEqual([]);
      } finally {
        await browser.close();
        await rm(dir, { recursive: true, force: true });
      }
    });
  },
);
