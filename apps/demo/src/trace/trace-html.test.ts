import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { chromiumPath, hasChromium, launchChromium } from "../../test/browser.js";
import { hostileText, supportDeskEvents } from "./__fixtures__/support-desk-run.js";
import { buildTraceJson, embedJson, renderTraceHtml, traceView } from "./index.js";

const inCi = Boolean(process.env.CI);
if (!hasChromium && !inCi) {
  console.warn(
    `\n${"!".repeat(78)}\n!! SKIPPING the trace viewer's browser test: no Chromium at ${chromiumPath}.\n!! Install it (apt-get install -y chromium) or set CHROMIUM_PATH. In CI it must run.\n${"!".repeat(78)}\n`,
  );
}

describe("buildTraceJson and renderTraceHtml", () => {
  it("builds spans and meta from a stored run", async () => {
    const trace = buildTraceJson(await supportDeskEvents());
    expect(trace.meta).toMatchObject({
      runId: "run_demo_trace",
      agentId: "support-desk",
      status: "completed",
      why: "end_turn",
    });
    expect(trace.spans.map((span) => span.name)).toContain("execute_tool send_email");
    const { totals } = traceView(trace.spans);
    expect(totals).toMatchObject({
      modelCalls: 3,
      toolCalls: 3,
      blocked: 1,
      flagged: 1,
      errors: 0,
      inputTokens: 1200 + 900 + 300 + 1650 + 1200 + 1900 + 1200,
      outputTokens: 140,
      cacheReadTokens: 3300,
      cacheWriteTokens: 300,
    });
    expect(totals.costUsd).toBeGreaterThan(0);
  });

  it("redacts spans and the task when given redact", async () => {
    const trace = buildTraceJson(await supportDeskEvents(), {
      redact: (value) => JSON.parse(JSON.stringify(value).replaceAll("A1001", "[ORDER]")),
    });
    expect(JSON.stringify(trace)).not.toContain("A1001");
  });

  it("rejects what is not a run's log", () => {
    expect(() => buildTraceJson([])).toThrow(/run-start/);
    expect(() => renderTraceHtml([], { runId: "" })).toThrow(/meta.runId/);
  });

  it("embeds the data so nothing in it can end the script block", async () => {
    const trace = buildTraceJson(await supportDeskEvents());
    const html = renderTraceHtml(trace.spans, trace.meta);
    expect(JSON.stringify(trace)).toContain("</script>");
    expect(html.match(/<\/script/gi)).toHaveLength(2);
    expect(html).not.toContain("\u2028");
    expect(html).not.toMatch(/https?:\/\//);
  });

  it("round-trips any content through the embedded JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: "binary" }), (value, text) => {
        const embedded = embedJson({ value, text });
        return (
          !/[<>&\u2028\u2029]/.test(embedded) &&
          JSON.stringify(JSON.parse(embedded)) === JSON.stringify({ value, text })
        );
      }),
    );
  });
});

describe.skipIf(!hasChromium && !inCi)("trace.html in headless Chromium", () => {
  let file: string;
  let expected: ReturnType<typeof traceView>;
  beforeAll(async () => {
    const trace = buildTraceJson(await supportDeskEvents());
    expected = traceView(trace.spans);
    const dir = await mkdtemp(join(tmpdir(), "loopguard-trace-"));
    file = join(dir, "trace.html");
    await writeFile(file, renderTraceHtml(trace.spans, trace.meta));
    return () => rm(dir, { recursive: true, force: true });
  });

  it("opens from file:// offline with the tree, the figures, badges and a details panel", {
    timeout: 60_000,
  }, async () => {
    if (!hasChromium)
      throw new Error(
        `[loopguard] CI is set but Chromium is missing at ${chromiumPath}: .ci/run must install it (apt-get install -y chromium)`,
      );
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({
        viewport: { width: 1400, height: 760 },
        deviceScaleFactor: 1,
      });
      const problems: string[] = [];
      const requests: string[] = [];
      page.on("console", (message) => {
        if (message.type() === "error" || message.type() === "warning")
          problems.push(`${message.type()}: ${message.text()}`);
      });
      page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
      page.on("request", (request) => requests.push(request.url()));
      await page.goto(pathToFileURL(file).href);

      // The tree: one row per span, in tree order, nested under the run.
      const rows = page.getByRole("treeitem");
      await expect.poll(() => rows.count()).toBe(expected.rows.length);
      const names = await page.locator(".row .label").allTextContents();
      expect(names).toEqual(expected.rows.map((row) => row.name));
      expect(await page.locator('[role="treeitem"][aria-level="1"]').count()).toBe(1);
      expect(await page.locator('[role="treeitem"][aria-level="3"]').count()).toBe(6);

      // The figures at the top.
      const total = (name: string) => page.locator(`[data-total="${name}"] dd`).textContent();
      expect(await total("Cost")).toBe(`$${expected.totals.costUsd.toFixed(4)}`);
      expect(await total("Input tokens")).toBe(expected.totals.inputTokens.toLocaleString("en-US"));
      expect(await total("Output tokens")).toBe(String(expected.totals.outputTokens));
      expect(await total("Blocked")).toBe("1");
      expect(await total("Injections flagged")).toBe("1");
      expect(await page.locator("#status").textContent()).toBe("completed");

      // Blocked and flagged calls are marked; the hostile tool output stayed text.
      const email = page.locator('.row:has(.label:text-is("execute_tool send_email"))');
      await expect.poll(() => email.locator(".badge.b-blocked").textContent()).toBe("blocked");
      expect(await email.locator(".note").textContent()).toBe("policy_deny");
      expect(await email.getAttribute("aria-label")).toContain("blocked: policy_deny");
      const lookupRow = page.locator('.row:has(.label:text-is("execute_tool lookup_order"))');
      expect(await lookupRow.locator(".badge.b-flagged").textContent()).toBe("flagged");
      expect(await lookupRow.locator(".note").textContent()).toBe("flagged as suspicious");
      expect(await lookupRow.getAttribute("aria-label")).toContain("flagged as suspicious");
      expect(await page.locator(".bar.blocked").count()).toBe(1);
      expect(
        await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned),
      ).toBeUndefined();

      // A click opens the span's details, content included.
      const details = page.getByRole("region", { name: "Span details" });
      expect(await details.isVisible()).toBe(false);
      await page.locator('.row:has(.label:text-is("execute_tool lookup_order"))').click();
      expect(await details.isVisible()).toBe(true);
      expect(await page.locator("#details-title").textContent()).toBe("execute_tool lookup_order");
      const text = (await details.textContent()) ?? "";
      expect(text).toContain("loopguard.injection.verdict");
      expect(text).toContain("injection.flagged");
      expect(text).toContain(hostileText.slice(0, 20));

      // Keyboard: Escape closes, arrows move, Enter opens, Left folds.
      await page.keyboard.press("Escape");
      expect(await details.isVisible()).toBe(false);
      await page.keyboard.press("ArrowDown");
      await page.keyboard.press("Enter");
      expect(await page.locator("#details-title").textContent()).toBe(
        expected.rows[
          expected.rows.findIndex((row) => row.name === "execute_tool lookup_order") + 1
        ]!.name,
      );
      await page.keyboard.press("Escape");
      await page.keyboard.press("Home");
      await page.keyboard.press("ArrowLeft");
      expect(await page.locator(".row:visible").count()).toBe(1);
      await page.keyboard.press("ArrowRight");
      expect(await page.locator(".row:visible").count()).toBe(expected.rows.length);

      // The screenshot, with the refused call open.
      await email.click();
      expect(await page.locator("#details-title").textContent()).toBe("execute_tool send_email");
      expect((await details.textContent()) ?? "").toContain("policy_deny");
      const reports = resolve(import.meta.dirname, "../../reports");
      await mkdir(reports, { recursive: true });
      await page.screenshot({ path: join(reports, "trace.png"), fullPage: true });

      expect(problems).toEqual([]);
      expect(requests.every((url) => url.startsWith("file:") || url.startsWith("data:"))).toBe(
        true,
      );
    } finally {
      await browser.close();
    }
  });
});
