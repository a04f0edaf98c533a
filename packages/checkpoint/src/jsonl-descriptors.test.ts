/**
 * The JSONL store's descriptor budget, with faults injected: a cap the store never exceeds
 * however many runs write at once, a process out of descriptors (EMFILE) as a StoreWriteError
 * with advice, and a run whose log cannot be created leaving no file behind.
 */
import { constants, existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StoredEventInput } from "@loopguard/core";
import { createAgent, LoopguardError } from "@loopguard/core";
import { bareStart, retryEvent, scriptedModel } from "@loopguard/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { defaultDescriptorCap } from "./descriptor-budget.js";
import { type JsonlEventStore, jsonlEventStore, logFiles } from "./jsonl-event-store.js";

const original = { ...logFiles };
const stores: JsonlEventStore[] = [];
afterEach(async () => {
  Object.assign(logFiles, original);
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
const newStore = (options: { maxOpenFiles?: number; lockIdleMs?: number } = {}) => {
  const store = jsonlEventStore({
    dir: mkdtempSync(join(tmpdir(), "lg-descriptors-")),
    ...options,
  });
  stores.push(store);
  return store;
};
const event = (type: string, index: number): StoredEventInput =>
  type === "run-start" ? bareStart(`r${index}`) : retryEvent(index, "m", 1);
const errno = (code: string) => Object.assign(new Error(`${code}: injected`), { code });

describe("the JSONL store's descriptor budget", () => {
  it("sizes the default cap from the soft limit: half of it, within 16 and 4 096", () => {
    expect(defaultDescriptorCap(1024)).toBe(512);
    expect(defaultDescriptorCap(20)).toBe(16);
    expect(defaultDescriptorCap(1_048_576)).toBe(4_096);
    expect(defaultDescriptorCap(undefined)).toBe(256);
  });

  it("never has more logs open than its cap while 300 runs append at once, and loses nothing", async () => {
    const store = newStore({ maxOpenFiles: 8 });
    let open = 0;
    let peak = 0;
    logFiles.open = async (path, flags) => {
      const fd = await original.open(path, flags);
      open += 1;
      peak = Math.max(peak, open);
      return fd;
    };
    logFiles.close = async (fd) => {
      open -= 1;
      return original.close(fd);
    };
    await Promise.all(
      Array.from({ length: 300 }, async (_, run) => {
        for (let seq = 0; seq < 5; seq += 1) {
          await store.append(`r${run}`, [event(seq === 0 ? "run-start" : "model-retry", seq)], {
            expectedSeq: seq,
          });
          // Other runs get a turn between two appends of one run.
          await new Promise((resolve) => setImmediate(resolve));
        }
      }),
    );
    expect(peak).toBeLessThanOrEqual(8);
    expect(store.descriptors().peakHeld).toBeLessThanOrEqual(4);
    for (const run of [0, 150, 299]) expect(await store.read(`r${run}`)).toHaveLength(5);
  });

  it("turns EMFILE into a StoreWriteError that says what to do, and leaves no log behind", async () => {
    const store = newStore();
    logFiles.open = async (path, flags) => {
      if (flags & constants.O_CREAT) throw errno("EMFILE");
      return original.open(path, flags);
    };
    const error = await store.append("r_emfile", [event("run-start", 0)], { expectedSeq: 0 }).then(
      () => undefined,
      (rejection: unknown) => rejection,
    );
    expect(LoopguardError.isInstance(error) && error.code).toBe("store_write_failed");
    expect((error as Error).message).toMatch(
      /^\[checkpoint\] creating .*r_emfile\.jsonl: the process is out of file descriptors \(EMFILE\)/,
    );
    expect((error as Error).message).toMatch(/ulimit -n/);
    expect(existsSync(store.fileOf("r_emfile"))).toBe(false);
    expect(await store.list()).toEqual([]);
    // Once descriptors are back, the same run starts from scratch.
    Object.assign(logFiles, original);
    await expect(
      store.append("r_emfile", [event("run-start", 0)], { expectedSeq: 0 }),
    ).resolves.toEqual({ nextSeq: 1 });
  });

  it("agent.run returns failed (no throw) when the run-start cannot be written, and leaves no run running", async () => {
    const store = newStore();
    logFiles.open = async (path, flags) => {
      if (flags & constants.O_CREAT) throw errno("EMFILE");
      return original.open(path, flags);
    };
    const agent = createAgent({
      store,
      tools: [],
      model: scriptedModel([{ content: "never asked" }]),
    });
    const result = await agent.run("where is order A1?", { runId: "r_cannot_start" });
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(
      /could not start: the event store did not record its run-start .*out of file descriptors/,
    );
    expect(existsSync(store.fileOf("r_cannot_start"))).toBe(false);
    expect(await store.list({ status: "running" })).toEqual([]);
  });

  it("retries EMFILE for a while before failing, so a brief shortage costs nothing", async () => {
    const store = newStore();
    let failures = 2;
    logFiles.open = async (path, flags) => {
      if (flags & constants.O_CREAT && failures > 0) {
        failures -= 1;
        throw errno("EMFILE");
      }
      return original.open(path, flags);
    };
    await expect(
      store.append("r_brief", [event("run-start", 0)], { expectedSeq: 0 }),
    ).resolves.toEqual({ nextSeq: 1 });
    expect(failures).toBe(0);
  });

  it("removes a log whose first write failed: the run never started, so nothing is left running", async () => {
    const store = newStore();
    logFiles.write = async () => {
      throw errno("ENOSPC");
    };
    const error = await store.append("r_enospc", [event("run-start", 0)], { expectedSeq: 0 }).then(
      () => undefined,
      (rejection: unknown) => rejection as Error,
    );
    expect(error?.message).toMatch(
      /creating .*r_enospc\.jsonl failed \(ENOSPC: injected\); the file was removed/,
    );
    expect(existsSync(store.fileOf("r_enospc"))).toBe(false);
    expect(await store.list({ status: "running" })).toEqual([]);
    Object.assign(logFiles, original);
    await expect(
      store.append("r_enospc", [event("run-start", 0)], { expectedSeq: 0 }),
    ).resolves.toEqual({ nextSeq: 1 });
  });
});
