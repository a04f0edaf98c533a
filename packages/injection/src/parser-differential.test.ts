import type { ToolCall } from "@loopguard/core";
import { RunState } from "@loopguard/core/plugin";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type SinkTrickCase,
  sinkTrickCase,
  trickSinks,
  trickToolOf,
  trustedBase,
  trustedOf,
  trustedTargets,
  untrustedReach,
} from "../bench/sink-tricks.mjs";
import { taintGate } from "./taint-gate.js";

// The parser-differential property: whatever tricks shape a sink argument
// (userinfo and delimiters, backslashes, tabs and newlines, IDN look-alikes in every label,
// full-width and ideographic dots, trailing dots, IPv4 in decimal, hex and octal, ports,
// percent-encoding at every position, lists with every separator), an argument the gate admits
// reaches only what the task named, as WHATWG URL, the host parser, the Public Suffix List and
// libphonenumber-js read it. 1,000 cases here; `node bench/parser-differential.mjs` runs 100,000.

const gate = taintGate({ sinks: trickSinks });
const toolOf = trickToolOf;

function decideCase(testCase: SinkTrickCase) {
  const run = new RunState({ runId: "run_p", agentId: "agent", task: testCase.task });
  const [toolName, argument] = toolOf[testCase.sinkKind];
  const call: ToolCall = {
    tool: toolName,
    args: { [argument]: testCase.value },
    toolUseId: "toolu_p",
    idempotencyKey: "run_p:toolu_p",
    sensitive: false,
    idempotent: false,
    run,
  };
  return gate.check(call);
}

describe("parser-differential property", () => {
  it("every admitted argument reaches only hosts, mailboxes, registrable domains and E.164 numbers the task named", async () => {
    let admitted = 0;
    await fc.assert(
      fc.asyncProperty(sinkTrickCase, async (testCase) => {
        const decision = await decideCase(testCase);
        if (decision.type !== "allow") return;
        admitted += 1;
        const bad = untrustedReach(
          testCase.sinkKind,
          testCase.value,
          trustedTargets(testCase.trusted),
        );
        expect(bad, JSON.stringify(testCase.value)).toEqual([]);
      }),
      { numRuns: 1000, seed: 20261201 },
    );
    // The property must not hold vacuously: the benign forms among the cases are admitted.
    expect(admitted).toBeGreaterThan(20);
  }, 120_000);

  it("admits the task's own values as written (the benign twins)", async () => {
    await fc.assert(
      fc.asyncProperty(trustedBase, async (base) => {
        const trusted = trustedOf(base);
        for (const [sinkKind, value] of [
          ["url", trusted.url],
          ["url", trusted.ipUrl],
          ["email", trusted.email],
          ["domain", trusted.host],
          ["host", trusted.host],
          ["phone", trusted.phone],
          ["phone", trusted.phone.replace(/ /g, "")],
        ] as const) {
          const decision = await decideCase({ task: trusted.task, trusted, sinkKind, value });
          expect(decision, `${sinkKind} ${value}`).toEqual({ type: "allow" });
        }
      }),
      { numRuns: 100, seed: 20261201 },
    );
  });
});
