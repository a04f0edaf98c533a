import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, hasChromium, launchChromium } from "./browser.js";
import { built, run, start } from "./cli-helpers.js";

// The web inbox over the worker fleet's PostgreSQL: an approval given in the page is resumed
// by a worker process, and a freeze from the page halts the next run a worker takes.
const url = process.env.DATABASE_URL;
if (process.env.CI && !url)
  throw new Error("[loopguard] CI is set but DATABASE_URL is not: .ci/run must start PostgreSQL");

const secret = "web-ui-postgres-secret-0123";
const schema = `web_ui_${process.pid}`;
let browser: Browser;
const children: Array<ReturnType<typeof start>> = [];

describe.skipIf(!built || !url || !hasChromium)(
  "loopguard serve --database-url: the inbox over the worker fleet",
  () => {
    let base = "";
    let signIn = "";

    beforeAll(async () => {
      const worker = start([
        "worker",
        "--connection",
        url!,
        "--schema",
        schema,
        "--concurrency",
        "2",
        "--polling-ms",
        "500",
      ]);
      children.push(worker);
      await worker.waitFor(/loopguard worker \S+:/, 60_000);
      const server = start(
        [
          "serve",
          "--port",
          "0",
          "--database-url",
          url!,
          "--schema",
          schema,
          "--user",
          "finance.kim",
        ],
        {
          LOOPGUARD_WEBHOOK_SECRET: secret,
        },
      );
      children.push(server);
      await server.waitFor(/loopguard serve: /, 60_000);
      signIn = /^(http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)$/m.exec(server.output())![1]!;
      base = new URL(signIn).origin;
      browser = await launchChromium();
    }, 600_000);

    afterAll(async () => {
      await browser?.close();
      for (const child of children) child.child.kill("SIGTERM");
      await Promise.all(children.map((child) => child.exited));
    });

    const submit = (task: string) => {
      const result = run(["submit", task, "--connection", url!, "--schema", schema]);
      expect(result.status, result.stderr).toBe(0);
      return /(run_[0-9a-f]{16})/.exec(result.stdout)![1]!;
    };
    const statusOf = async (runId: string) => {
      const response = await fetch(`${base}/api/runs/${runId}`, {
        headers: { "x-loopguard-secret": secret },
      });
      if (response.status === 404) return "missing";
      return ((await response.json()) as { status: string }).status;
    };

    it("approves a parked run in the page and a worker finishes it; a freeze halts the next run", {
      timeout: 600_000,
    }, async () => {
      const runId = submit("Hi, order A1002 arrived broken. Can I get a refund?");
      await eventually(() => statusOf(runId), { timeout: 180_000 }).toBe("awaiting_approval");

      const page = await browser.newPage();
      await page.goto(signIn);
      expect(await page.locator("header .where").textContent()).toMatch(
        /PostgreSQL .*schema web_ui_/,
      );
      const card = page.locator(`article[data-run="${runId}"]`);
      await eventually(() => card.textContent()).toContain("issue_refund");
      await card.getByRole("button", { name: "Approve" }).click();
      await eventually(() => card.locator(".result").textContent()).toMatch(
        /Approved by finance\.kim/,
      );
      await eventually(() => statusOf(runId), { timeout: 180_000 }).toBe("completed");
      await page.goto(`${base}/runs/${runId}`);
      expect(await page.locator("ul.answered").textContent()).toMatch(/approve by finance\.kim/);

      await page.goto(`${base}/fleet`);
      await page.getByRole("textbox", { name: "Reason" }).fill("payments provider incident");
      await page.getByRole("checkbox").check();
      await page.getByRole("button", { name: "Freeze the fleet" }).click();
      await eventually(() => page.locator("main").textContent()).toMatch(/Frozen by finance\.kim/);
      const frozen = submit("Hi, order A1001 arrived broken. Can I get a refund?");
      await eventually(() => statusOf(frozen), { timeout: 180_000 }).toBe("halted");
      const unfreeze = await fetch(`${base}/api/fleet/unfreeze`, {
        method: "POST",
        headers: { "x-loopguard-secret": secret, "content-type": "application/json" },
        body: "{}",
      });
      expect(unfreeze.status).toBe(200);
      await page.close();
    });
  },
);
