/**
 * A full disk in the middle of a run, on the real JSONL store: the write of a tool's result
 * fails halfway (a torn line, then ENOSPC), injected at the file-system call the store makes.
 * The run's result must say the effect may have happened and that resume re-runs it with the
 * same idempotency key; a fresh store on the same directory (a restarted process) resumes it and
 * the tool gets the same key. A run whose first event cannot be written is reported as not
 * started, with its id, and leaves no log.
 */
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAgent, type EventStore, tool } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import { jsonlEventStore, logFiles } from "./jsonl-event-store.js";

const original = { ...logFiles };
afterEach(() => {
  Object.assign(logFiles, original);
});
const enospc = () =>
  Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });

function refundAgent(store: EventStore, keys: string[]) {
  const refund = tool({
    name: "issue_refund",
    description: "Refund an order.",
    input: v.object({ order_id: v.string() }),
    run: async ({ order_id }, context) => {
      keys.push(context.idempotencyKey);
      return `refunded ${order_id}`;
    },
  });
  const model = scriptedModel((request) =>
    request.messages.length < 2
      ? {
          content: [
            { type: "tool_use", id: "toolu_r1", name: "issue_refund", input: { order_id: "A1" } },
          ],
        }
      : { content: "Refunded." },
  );
  return createAgent({ model, tools: [refund], store });
}

describe("the JSONL store on a full disk", () => {
  it("a torn tool result: the effect may have happened, and a restarted process resumes with the same idempotency key", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-full-disk-"));
    const store = jsonlEventStore({ dir });
    const keys: string[] = [];
    let injected = 0;
    logFiles.write = async (fd, buffer, offset, length, position) => {
      if (injected === 0 && buffer.toString("utf8").includes('"tool-call-result"')) {
        injected += 1;
        // Half the line reaches the file, then the disk is full.
        const half = Math.floor(length / 2);
        await original.write(fd, buffer, offset, half, position);
        logFiles.write = async () => {
          throw enospc();
        };
        return half;
      }
      return original.write(fd, buffer, offset, length, position);
    };
    const result = await refundAgent(store, keys).run("Refund A1", { runId: "run_torn" });
    Object.assign(logFiles, original);
    expect(injected).toBe(1);
    expect(keys).toEqual(["run_torn:toolu_r1"]);
    expect(result.status).toBe("failed");
    expect(result.uncertainCalls).toEqual([
      { tool: "issue_refund", toolUseId: "toolu_r1", idempotencyKey: "run_torn:toolu_r1" },
    ]);
    expect(result.error).toMatch(
      /its effect may have happened\. resume\("run_torn"\) runs it again/,
    );
    expect(result.error).toMatch(/ENOSPC/);
    expect(result.error).not.toMatch(/before acting/);
    await store.close();

    // A restarted process: a new store on the same directory.
    const restarted = jsonlEventStore({ dir });
    const resumed = await refundAgent(restarted, keys).resume("run_torn");
    expect(resumed.status).toBe("completed");
    expect(resumed.answer).toBe("Refunded.");
    expect(keys).toEqual(["run_torn:toolu_r1", "run_torn:toolu_r1"]);
    const types = (await restarted.read("run_torn")).map((event) => event.type);
    expect(types.filter((type) => type === "tool-call-result")).toHaveLength(1);
    expect(types.at(-1)).toBe("run-end");
    await restarted.close();
  });

  it("the first event cannot be written: not started, with its id, and no log left to resume", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lg-full-disk-"));
    const store = jsonlEventStore({ dir });
    const keys: string[] = [];
    logFiles.write = async () => {
      throw enospc();
    };
    const result = await refundAgent(store, keys).run("Refund A1", { runId: "run_nospace" });
    Object.assign(logFiles, original);
    expect(result).toMatchObject({ runId: "run_nospace", status: "failed", why: "not_started" });
    expect(result.error).toMatch(/run run_nospace could not start: .*ENOSPC.*nothing to resume/);
    expect(keys).toEqual([]);
    expect(existsSync(store.fileOf("run_nospace"))).toBe(false);
    expect(await store.list()).toEqual([]);
    await store.close();
  });
});
