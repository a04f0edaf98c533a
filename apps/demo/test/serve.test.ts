import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { built, leaksIn, ledgerOf, run, runIdOf, start } from "./cli-helpers.js";

const dir = mkdtempSync(join(tmpdir(), "loopguard-serve-"));
const secret = "s3cret-webhook-key-for-tests";
const stops: Array<() => void> = [];
afterAll(() => {
  for (const stop of stops) stop();
  rmSync(dir, { recursive: true, force: true });
});

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

describe.skipIf(!built)("loopguard serve", () => {
  it("refuses a secret that is too short, and no secret on an address the network reaches", () => {
    const result = run(["serve", "--dir", join(dir, "none", "runs")], {
      LOOPGUARD_WEBHOOK_SECRET: "short",
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("LOOPGUARD_WEBHOOK_SECRET is shorter than 16 characters");
    const open = run(["serve", "--host", "0.0.0.0", "--dir", join(dir, "none", "runs")], {
      LOOPGUARD_WEBHOOK_SECRET: "",
    });
    expect(open.status).toBe(2);
    expect(open.stderr).toContain("serve --host 0.0.0.0 needs LOOPGUARD_WEBHOOK_SECRET");
  });

  it("on 127.0.0.1 without a secret, generates one for the process and says so; it works on the webhook", async () => {
    const port = await freePort();
    const server = start(["serve", "--port", String(port), "--dir", join(dir, "gen", "runs")], {
      LOOPGUARD_WEBHOOK_SECRET: "",
    });
    stops.push(() => server.child.kill("SIGTERM"));
    await server.waitFor(/loopguard serve: /);
    const lines = server.output().split("\n");
    // The sign-in URL stays the first line; the generated secret is said right after it.
    expect(lines[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=\S+$/);
    const generated = /generated one \(it lasts until Ctrl-C\): ([\w-]{32})\./.exec(
      lines[1] ?? "",
    )?.[1];
    expect(generated, lines[1]).toBeDefined();
    const base = `http://127.0.0.1:${port}`;
    expect(
      (await fetch(`${base}/api/inbox`, { headers: { "x-loopguard-secret": generated! } })).status,
    ).toBe(200);
    expect(
      (await fetch(`${base}/api/inbox`, { headers: { "x-loopguard-secret": "x".repeat(32) } }))
        .status,
    ).toBe(401);
    server.child.kill("SIGTERM");
    await server.exited;
  });

  it("approves a parked run through the webhook with the secret; a wrong secret is 401", async () => {
    const root = join(dir, "a");
    const runs = join(root, "runs");
    const parked = run(["demo", "--order", "A1002", "--dir", runs]);
    expect(parked.stdout).toMatch(/status\s+awaiting_approval/);
    const runId = runIdOf(parked.stdout);
    const halted = runIdOf(run(["demo", "--order", "A1002", "--dir", runs]).stdout);

    const port = await freePort();
    const server = start(["serve", "--port", String(port), "--dir", runs], {
      LOOPGUARD_WEBHOOK_SECRET: secret,
    });
    stops.push(() => server.child.kill("SIGTERM"));
    await server.waitFor(/loopguard serve: /);
    const base = `http://127.0.0.1:${port}`;
    const approve = (id: string, body: unknown, key?: string) =>
      fetch(`${base}/runs/${id}/approve`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(key !== undefined ? { "x-loopguard-secret": key } : {}),
        },
        body: JSON.stringify(body),
      });
    const refundsOf = (id: string) =>
      ledgerOf(root).filter(
        (effect) => effect.kind === "refund" && effect.idempotencyKey.startsWith(`${id}:`),
      );

    const listed = (await (
      await fetch(`${base}/runs`, { headers: { "x-loopguard-secret": secret } })
    ).json()) as Array<{ runId: string }>;
    expect(listed.map((item) => item.runId)).toContain(runId);

    const wrong = await approve(runId, { decision: "approve", approver: "eve" }, `${secret}x`);
    expect(wrong.status).toBe(401);
    const missing = await approve(runId, { decision: "approve", approver: "eve" });
    expect(missing.status).toBe(401);
    expect(refundsOf(runId)).toHaveLength(0);

    const noApprover = await approve(runId, { decision: "approve" }, secret);
    expect(noApprover.status).toBe(400);

    const ok = await approve(runId, { decision: "approve", approver: "dana" }, secret);
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { status: string }).status).toBe("completed");
    expect(refundsOf(runId).map((effect) => effect.payload.amount)).toEqual([649]);

    const unreadable = await approve(halted, { decision: "yes!!", approver: "kim" }, secret);
    expect(unreadable.status).toBe(200);
    expect(((await unreadable.json()) as { status: string }).status).toBe("halted");
    expect(refundsOf(halted)).toHaveLength(0);

    expect((await fetch(`${base}/runs/${runId}/trace.html`)).status).toBe(401);
    const html = await fetch(`${base}/runs/${runId}/trace.html`, {
      headers: { "x-loopguard-secret": secret },
    });
    expect(html.status).toBe(200);
    expect(await html.text()).toContain(runId);
    expect(
      (
        await fetch(`${base}/runs/run_0000000000000000/trace.html`, {
          headers: { "x-loopguard-secret": secret },
        })
      ).status,
    ).toBe(404);
    expect(leaksIn(runs)).toEqual([]);

    server.child.kill("SIGTERM");
    await server.exited;
  });
});
