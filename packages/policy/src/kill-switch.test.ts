import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createAgent, guardTool, tool, withRun } from "@loopguard/core";
import { memoryEventStore, scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { callOf } from "./__fixtures__/calls.js";
import { FreezeStoreError } from "./errors.js";
import { fileFreezeStore } from "./file-freeze-store.js";
import type { FreezeStore } from "./freeze-store.js";
import { killSwitch } from "./kill-switch.js";
import { runGuard } from "./run-guard.js";

const run = promisify(execFile);
const child = join(import.meta.dirname, "__fixtures__", "freeze-child.mjs");
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "loopguard-freeze-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("fileFreezeStore", () => {
  it("is not frozen without a file, and records freezes and unfreezes", async () => {
    const clock = { now: Date.parse("2026-11-30T15:00:00Z") };
    const store = fileFreezeStore({
      path: join(dir, "nested", "freeze.json"),
      now: () => clock.now,
    });
    expect(await store.status()).toEqual({ frozen: false });
    await store.freeze({ reason: "refund bug", by: "alice" });
    expect(await store.status()).toEqual({
      frozen: true,
      reason: "refund bug",
      by: "alice",
      at: clock.now,
    });
    await store.unfreeze({ by: "bob" });
    expect(await store.status()).toEqual({ frozen: false, by: "bob", at: clock.now });
  });

  it("caches reads for cacheMs, then sees a change made by someone else", async () => {
    const path = join(dir, "freeze.json");
    const clock = { now: 0 };
    const store = fileFreezeStore({ path, cacheMs: 250, now: () => clock.now });
    expect((await store.status()).frozen).toBe(false);
    await writeFile(path, JSON.stringify({ version: 1, frozen: true, reason: "x" }));
    clock.now = 249;
    expect((await store.status()).frozen).toBe(false);
    clock.now = 250;
    expect((await store.status()).frozen).toBe(true);
  });

  it("fails closed on a corrupt or foreign file", async () => {
    const path = join(dir, "freeze.json");
    const store = fileFreezeStore({ path, cacheMs: 0 });
    await writeFile(path, "{ not json");
    await expect(store.status()).rejects.toThrow(FreezeStoreError);
    await expect(store.status()).rejects.toThrow(/\[policy\] the freeze file .* is not valid JSON/);
    await writeFile(path, JSON.stringify({ version: 2, frozen: false }));
    await expect(store.status()).rejects.toThrow(/is not a version 1 freeze file \(version:/);
    await writeFile(path, JSON.stringify({ version: 1, frozen: "no" }));
    await expect(store.status()).rejects.toThrow(/frozen/);
    const gate = killSwitch({ store });
    expect(await gate.check(callOf("lookup_order"))).toMatchObject({
      type: "deny",
      reason: "kill_switch_unavailable",
    });
  });

  it("validates its options", () => {
    expect(() => fileFreezeStore({ path: "" })).toThrow(/\[policy\] fileFreezeStore\(\{ path \}\)/);
    expect(() => fileFreezeStore({ path: "x", cacheMs: -1 })).toThrow(/cacheMs must be/);
    expect(() => killSwitch({ store: {} as never })).toThrow(/store must be a FreezeStore/);
  });
});

describe("killSwitch", () => {
  it("is a gate at step 0 that refuses every call while frozen", async () => {
    const store = fileFreezeStore({ path: join(dir, "freeze.json"), cacheMs: 0 });
    const gate = killSwitch({ store });
    expect(gate.name).toBe("kill_switch");
    expect(gate.step).toBe("0");
    expect(await gate.check(callOf("x"))).toEqual({ type: "allow" });
    await store.freeze({ reason: "refund bug", by: "alice" });
    expect(await gate.check(callOf("x"))).toMatchObject({
      type: "deny",
      reason: "kill_switch",
      message: expect.stringMatching(
        /^All agents are frozen by alice since .*: refund bug\. No tool calls are allowed\.$/,
      ),
      details: { freezeReason: "refund bug", by: "alice" },
    });
    await store.unfreeze();
    expect(await gate.check(callOf("x"))).toEqual({ type: "allow" });
  });

  it("fails closed on a store that throws or answers nonsense", async () => {
    const broken: FreezeStore = {
      name: "broken",
      status: async () => ({ frozen: "maybe" }) as never,
      freeze: async () => {},
      unfreeze: async () => {},
    };
    expect(await killSwitch({ store: broken }).check(callOf("x"))).toMatchObject({
      type: "deny",
      reason: "kill_switch_unavailable",
    });
  });

  it("halts a run under guardTool at its next call", async () => {
    const store = fileFreezeStore({ path: join(dir, "freeze.json"), cacheMs: 0 });
    const lookup = guardTool(async () => "ok", {
      name: "lookup_order",
      gates: [killSwitch({ store })],
    });
    await withRun({ agentId: "assistant" }, async (handle) => {
      expect((await lookup({})).type).toBe("ok");
      await store.freeze({ reason: "incident", by: "oncall" });
      expect(await lookup({})).toMatchObject({
        type: "refused",
        reason: "kill_switch",
        decision: { refusedAt: "0:kill_switch", halted: true },
      });
      expect(handle.halted).toBe(true);
      await store.unfreeze();
      // A halted run stays halted.
      expect(await lookup({})).toMatchObject({ type: "refused", reason: "run_halted" });
    });
  });

  it("a freeze written by another process halts a running agent at its next call", async () => {
    const path = join(dir, "freeze.json");
    const clock = { now: 1_000_000 };
    const store = fileFreezeStore({ path, now: () => clock.now });
    let executed = 0;
    const lookup = tool({
      name: "lookup_order",
      description: "Look up an order.",
      input: v.object({ order_id: v.string() }),
      run: async () => ++executed,
    });
    const model = scriptedModel(async (_request, call) => {
      if (call === 2) {
        // Mid-run, an operator in another process freezes the fleet.
        const { stdout } = await run(process.execPath, [
          child,
          path,
          "refunds misbehaving",
          "oncall@acme-shop.com",
        ]);
        expect(stdout).toMatch(/frozen by process \d+/);
        clock.now += 1_000; // past the store's read cache
      }
      if (call <= 3)
        return {
          content: [
            {
              type: "tool_use",
              id: `toolu_${call}`,
              name: "lookup_order",
              input: { order_id: `A${call}` },
            },
          ],
        };
      return { content: "done" };
    });
    const events = memoryEventStore();
    const agent = createAgent({
      model,
      tools: [lookup],
      store: events,
      gates: [killSwitch({ store }), runGuard()],
    });
    const result = await agent.run("Look up A1 and A2");
    expect(result.status).toBe("halted");
    expect(result.haltReason).toBe("kill_switch");
    expect(executed).toBe(1);
    expect(model.calls).toBe(2);
    expect(result.blocked).toHaveLength(1);
    expect(result.blocked[0]).toMatchObject({
      toolUseId: "toolu_2",
      reason: "kill_switch",
      decision: {
        refusedAt: "0:kill_switch",
        halted: true,
        details: { by: "oncall@acme-shop.com", freezeReason: "refunds misbehaving" },
      },
    });
    expect(
      (await events.read(result.runId)).filter((event) => event.type === "run-halt"),
    ).toMatchObject([{ reason: "kill_switch" }]);
    // Resuming a halted run changes nothing, even after the fleet is unfrozen.
    await run(process.execPath, [child, path, "-", "oncall@acme-shop.com", "unfreeze"]);
    clock.now += 1_000;
    expect(await store.status()).toMatchObject({ frozen: false });
    expect((await agent.resume(result.runId)).status).toBe("halted");
  });
});
