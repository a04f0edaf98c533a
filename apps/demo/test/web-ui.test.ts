import { existsSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPath, eventually, hasChromium, launchChromium } from "./browser.js";
import { built, ledgerOf, run, runIdOf, start } from "./cli-helpers.js";
import { loginCookie } from "./web-harness.js";

// The web inbox of `loopguard serve`, driven in real Chromium (Debian's package).
if (!hasChromium && process.env.CI)
  throw new Error(
    `[loopguard] CI is set but Chromium is missing at ${chromiumPath}: .ci/run must install it`,
  );

const secret = "web-ui-secret-for-tests-0123";
const dir = mkdtempSync(join(tmpdir(), "loopguard-web-"));
const runs = join(dir, "runs");
let browser: Browser;
let server: ReturnType<typeof start>;
let signIn = "";
let base = "";

const parked = () => {
  const result = run(["demo", "--order", "A1002", "--dir", runs]);
  expect(result.stdout, `demo failed:\n${result.stderr}`).toMatch(/awaiting_approval/);
  return runIdOf(result.stdout);
};
const refundsOf = (runId: string) =>
  ledgerOf(dir).filter(
    (effect) => effect.kind === "refund" && effect.idempotencyKey.startsWith(`${runId}:`),
  );

async function statusOn(page: Page, runId: string): Promise<string> {
  const response = await page.request.get(`${base}/api/runs/${runId}`);
  return ((await response.json()) as { status: string }).status;
}

describe.skipIf(!built || !hasChromium)("loopguard serve: the web inbox in Chromium", () => {
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    ids.approve = parked();
    ids.deny = parked();
    ids.twoTabs = parked();
    ids.corrupt = parked();
    server = start(["serve", "--port", "0", "--dir", runs, "--user", "dana.lead"], {
      LOOPGUARD_WEBHOOK_SECRET: secret,
    });
    await server.waitFor(/loopguard serve: /);
    signIn = /^(http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)$/m.exec(server.output())![1]!;
    expect(server.output().split("\n")[0]).toBe(signIn);
    base = new URL(signIn).origin;
    browser = await launchChromium();
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    server?.child.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  });

  it("signs in once from the printed URL, approves and denies from the inbox, freezes the fleet", {
    timeout: 600_000,
  }, async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });

    // A link previewer (or a scanner, a prefetch) GETs the link first: that does not use it up.
    const preview = await fetch(signIn, { redirect: "manual" });
    expect(preview.status).toBe(200);
    expect(preview.headers.get("set-cookie")).toBeNull();
    expect(await preview.text()).toMatch(/method="post" action="\/login"/);
    // Sign in: the page posts the token; it becomes an HttpOnly, SameSite=Strict cookie and
    // leaves the URL.
    await page.goto(signIn);
    await page.waitForURL(`${base}/`);
    const cookies = await context.cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    // The token is spent: a second browser using the same link is not signed in.
    const other = await browser.newContext();
    const stolen = await other.newPage();
    await stolen.goto(signIn);
    await eventually(() => stolen.locator("h1").textContent()).toMatch(/already used/);
    expect(await other.cookies()).toEqual([]);
    await other.close();

    // The inbox: every parked run, oldest first, with its reason, arguments and bindings.
    const cards = page.locator("article.approval");
    await eventually(() => cards.count()).toBe(4);
    const order = await cards.evaluateAll((items) =>
      items.map((item) => item.getAttribute("data-run")),
    );
    expect(order).toEqual([ids.approve, ids.deny, ids.twoTabs, ids.corrupt]);
    const card = page.locator(`article[data-run="${ids.approve}"]`);
    await eventually(() => card.textContent()).toContain("policy_ask");
    const text = (await card.textContent()) ?? "";
    expect(text).toContain("issue_refund");
    expect(text).toContain("649");
    expect(text).toMatch(/bound to arguments \S+ and policy \S+/);
    expect(text).toMatch(/policy_ask \(asked by [a-z_]+\)/);
    expect(text).toMatch(/min left/);
    await eventually(() => page.locator("nav .count").textContent()).toBe("4");
    expect(await page.title()).toBe("(4) Inbox · loopguard");

    // Live: a run that parks while the page is open appears without a reload.
    ids.live = parked();
    await eventually(() => cards.count(), { timeout: 90_000 }).toBe(5);
    await eventually(() => page.locator(`article[data-run="${ids.live}"]`).count()).toBe(1);

    // Approve: the answer is recorded under the signed-in name and the run completes.
    await card.getByRole("textbox", { name: "Reason" }).fill("customer is a long-standing account");
    await card.getByRole("button", { name: "Approve" }).click();
    await expect
      .poll(() => card.locator(".result").textContent())
      .toMatch(/Approved by dana\.lead/);
    await eventually(() => statusOn(page, ids.approve!), { timeout: 120_000 }).toBe("completed");
    expect(refundsOf(ids.approve!).map((effect) => effect.payload.amount)).toEqual([649]);
    await page.goto(`${base}/runs/${ids.approve}`);
    await eventually(() => page.locator("dl.facts").textContent()).toContain("completed");
    expect(await page.locator("ul.answered").textContent()).toMatch(/approve by dana\.lead/);

    // Deny needs a reason; the refusal shows in the run's trace.
    await page.goto(`${base}/`);
    const denyCard = page.locator(`article[data-run="${ids.deny}"]`);
    await denyCard.getByRole("button", { name: "Deny" }).click();
    await eventually(() => denyCard.locator(".result").textContent()).toMatch(/Say why/);
    await denyCard
      .getByRole("textbox", { name: "Reason" })
      .fill("order is outside the refund window");
    await denyCard.getByRole("button", { name: "Deny" }).click();
    await expect
      .poll(() => denyCard.locator(".result").textContent())
      .toMatch(/Denied by dana\.lead/);
    await expect
      .poll(() => statusOn(page, ids.deny!), { timeout: 120_000 })
      .not.toBe("awaiting_approval");
    expect(refundsOf(ids.deny!)).toEqual([]);
    await page.goto(`${base}/runs/${ids.deny}`);
    await expect
      .poll(() => page.locator("ul.refusals").textContent(), { timeout: 60_000 })
      .toMatch(/issue_refund/);
    const trace = page.frameLocator("iframe.trace");
    await expect
      .poll(() => trace.locator("body").textContent(), { timeout: 60_000 })
      .toMatch(/blocked/i);

    // Freeze the fleet from the page: the next run is halted by the kill switch.
    await page.goto(`${base}/fleet`);
    await page.getByRole("textbox", { name: "Reason" }).fill("refunds misbehaving, investigating");
    await page.getByRole("checkbox").check();
    await page.getByRole("button", { name: "Freeze the fleet" }).click();
    await eventually(() => page.locator("main").textContent()).toMatch(/Frozen by dana\.lead/);
    // Screen readers hear it: the page's live region says what happened.
    await eventually(() => page.locator("#live").textContent()).toBe("The fleet is frozen.");
    const frozenRun = run(["demo", "--dir", runs]);
    expect(frozenRun.stdout).toMatch(/halted/);
    const frozenId = runIdOf(frozenRun.stdout);
    await page.goto(`${base}/runs?status=halted`);
    await eventually(() => page.locator("table").textContent()).toContain(frozenId);
    await page.goto(`${base}/fleet`);
    await page.getByRole("checkbox").check();
    await page.getByRole("button", { name: "Unfreeze the fleet" }).click();
    await eventually(() => page.locator("main").textContent()).toMatch(/Running/);

    expect(problems).toEqual([]);
    await context.close();
  });

  it("lets one of two tabs win a double approval and tells the other why it lost", {
    timeout: 300_000,
  }, async () => {
    const context = await browser.newContext();
    const login = await context.newPage();
    await login.goto(`${base}/login`);
    await login.getByLabel("Shared secret").fill(secret);
    await login.getByRole("button", { name: "Sign in" }).click();
    const first = await context.newPage();
    const second = await context.newPage();
    // Two tabs left open on the same request. Both live feeds are cut, so neither page can drop
    // the card before its click (a live tab would, which is right, but leaves nothing to
    // click): both buttons are pressed at once and the server decides. Whichever wins, exactly
    // one approval is recorded and the other tab says why it lost.
    const liveFeed = (url: URL) => url.pathname === "/api/live";
    await first.route(liveFeed, (route) => route.abort());
    await second.route(liveFeed, (route) => route.abort());
    await first.goto(`${base}/`);
    await second.goto(`${base}/`);
    const cards = [first, second].map((page) => page.locator(`article[data-run="${ids.twoTabs}"]`));
    await Promise.all(cards.map((card) => card.getByRole("button", { name: "Approve" }).click()));
    const results = () =>
      Promise.all(cards.map(async (card) => (await card.locator(".result").textContent()) ?? ""));
    // The winner's answer resumes its run before it replies; the loser waits behind it.
    await eventually(async () => (await results()).filter((text) => text !== "").length, {
      timeout: 180_000,
    }).toBe(2);
    const outcomes = await results();
    const won = outcomes.filter((text) => /^Approved by dana\.lead/.test(text));
    const lost = outcomes.filter((text) => /already answered: approve by dana\.lead/.test(text));
    expect({ won: won.length, lost: lost.length }, outcomes.join(" | ")).toEqual({
      won: 1,
      lost: 1,
    });
    await eventually(() => statusOn(first, ids.twoTabs!), { timeout: 120_000 }).toBe("completed");
    expect(refundsOf(ids.twoTabs!)).toHaveLength(1);
    await context.close();
  });

  it("shows a corrupt log as such without breaking the list, and a deleted run as a 404 page", {
    timeout: 300_000,
  }, async () => {
    writeFileSync(
      join(runs, `${ids.corrupt}.jsonl`),
      '{"seq":0,"type":"run-start"\nnot json at all\n',
    );
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/login`);
    await page.getByLabel("Shared secret").fill(secret);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.goto(`${base}/runs`);
    await eventually(() => page.locator("table").textContent()).toContain(ids.corrupt);
    await page.goto(`${base}/runs/${ids.corrupt}`);
    await expect
      .poll(() => page.getByRole("alert").first().textContent())
      .toMatch(/log cannot be read/);
    const deleted = ids.deny!;
    for (const suffix of [".jsonl", ".summary.json", ".lock"]) {
      const file = join(runs, `${deleted}${suffix}`);
      if (existsSync(file)) unlinkSync(file);
    }
    const gone = await page.goto(`${base}/runs/${deleted}`);
    expect(gone?.status()).toBe(404);
    expect(await page.locator("main").textContent()).toMatch(/not found/);
    await context.close();
  });

  it("refuses a request without a session (401), a foreign Origin (403), a foreign Host (403) and a POST without the CSRF token", async () => {
    const noSession = await fetch(`${base}/api/inbox`);
    expect(noSession.status).toBe(401);
    const page = await fetch(`${base}/runs`, { headers: { accept: "text/html" } });
    expect(page.status).toBe(401);
    expect(await page.text()).toMatch(/Sign in/);
    const foreign = await fetch(`${base}/api/inbox`, {
      headers: { "x-loopguard-secret": secret, origin: "http://evil.example" },
    });
    expect(foreign.status).toBe(403);
    // fetch() always sends the real Host, so the DNS-rebinding case uses node:http.
    const rebinding = await new Promise<number>((resolve, reject) => {
      const target = new URL(`${base}/api/inbox`);
      const request = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          headers: { "x-loopguard-secret": secret, host: `evil.example:${target.port}` },
        },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      request.on("error", reject);
      request.end();
    });
    expect(rebinding).toBe(403);
    // A session without the page's CSRF token cannot answer.
    const cookie = await loginCookie(base, secret);
    const forged = await fetch(`${base}/api/fleet/freeze`, {
      method: "POST",
      headers: { cookie, origin: base, "content-type": "application/json" },
      body: JSON.stringify({ reason: "forged" }),
    });
    expect(forged.status).toBe(403);
    const wrongSecret = await fetch(`${base}/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
      body: "secret=nope",
      redirect: "manual",
    });
    expect(wrongSecret.status).toBe(401);
  });
});
