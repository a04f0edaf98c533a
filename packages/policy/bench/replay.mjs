// Replay of recorded runs under a candidate policy: 100 runs of 1,000 calls each (200-byte
// arguments) in JSONL, re-judged under a 50-rule policy with a rate limit and the RunGuard.
// Run from packages/policy after `pnpm build` here and in packages/checkpoint:
//   node bench/replay.mjs [runs] [callsPerRun]
// Prints the time to read and re-judge every call, and the figure per call; asserts nothing.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { digestOf } from "@loopguard/core/plugin";
import { jsonlEventStore } from "../../checkpoint/dist/index.js";
import { replayRuns } from "../dist/index.js";

const runs = Number(process.argv[2] ?? 100);
const perRun = Number(process.argv[3] ?? 1000);
const dir = await mkdtemp(join(tmpdir(), "loopguard-replay-bench-"));
const tools = ["lookup_order", "search_kb", "issue_refund", "send_email"];
const pad = (text, size) => text + "x".repeat(Math.max(0, size - text.length));

function argsOf(tool, index) {
  // About 200 bytes of JSON each.
  if (tool === "issue_refund")
    return {
      order_id: `A${1000 + (index % 900)}`,
      amount: 10 + (index % 700),
      reason: pad("damaged in transit ", 150),
    };
  if (tool === "send_email")
    return {
      to: index % 49 === 0 ? "x@evil.example" : "ann@acme-shop.com",
      body: pad("Your refund is on its way. ", 160),
    };
  if (tool === "search_kb") return { query: pad(`refund policy ${index} `, 185) };
  return { order_id: `A${1000 + index}`, note: pad("customer asked where it is ", 165) };
}

const started = performance.now();
const store = jsonlEventStore({ dir });
let at = Date.parse("2026-11-30T00:00:00Z");
for (let run = 0; run < runs; run += 1) {
  const runId = `run_${String(run).padStart(4, "0")}`;
  const events = [
    {
      type: "run-start",
      runId,
      agentId: `desk${run % 4}`,
      task: "Help the customer",
      model: "scripted",
      maxTokens: 1024,
      budget: {},
      policyDigest: "live",
      toolDigest: "tools",
      at,
    },
  ];
  for (let call = 0; call < perRun; call += 1) {
    at += 250;
    const tool = tools[call % tools.length];
    const args = argsOf(tool, run * perRun + call);
    const id = `toolu_${call}`;
    events.push(
      {
        type: "model-response",
        step: call + 1,
        response: {
          id: `msg_${call}`,
          type: "message",
          role: "assistant",
          model: "scripted",
          content: [{ type: "tool_use", id, name: tool, input: args }],
          stop_reason: "tool_use",
          stop_sequence: null,
          usage: { input_tokens: 100, output_tokens: 20 },
        },
        costUsd: 0.0001,
        latencyMs: 1,
        attempts: 1,
        at,
      },
      {
        type: "tool-call-intent",
        step: call + 1,
        toolUseId: id,
        tool,
        args,
        argsDigest: digestOf(args),
        idempotencyKey: `${runId}:${id}`,
        decision: {
          outcome: "allow",
          passed: ["0.7:run_halted", "1:validation", "2:policy", "2.3:run_loop"],
        },
        at,
      },
      {
        type: "tool-call-result",
        step: call + 1,
        toolUseId: id,
        tool,
        status: "ok",
        content: `ok ${call}`,
        isError: false,
        durationMs: 1,
        attempts: 1,
        at,
      },
    );
  }
  events.push({ type: "run-end", status: "completed", answer: "done", why: "end_turn", at });
  await store.append(runId, events, { expectedSeq: 0 });
}
const written = performance.now() - started;

// 50 rules: 46 globs that never match, plus four that judge the calls above.
const rules = [];
for (let index = 0; index < 46; index += 1) rules.push({ effect: "deny", tool: `tool_${index}_*` });
rules.push(
  { effect: "deny", tool: "send_email", when: { arg: "to", domainNotIn: ["acme-shop.com"] } },
  { effect: "ask", tool: "issue_refund", when: { arg: "amount", gt: 500 } },
  {
    effect: "deny",
    tool: "search_kb",
    when: { arg: "query", matches: "\\bpassword\\b", flags: "i" },
  },
  { effect: "allow", tool: "lookup_*" },
);
const candidate = {
  version: 1,
  default: "allow",
  rules,
  rateLimits: [{ tool: "issue_refund", perAgent: true, capacity: 20, refillPerSecond: 1 }],
  runGuard: { irreversibleTools: ["issue_refund"] },
};

if (global.gc) global.gc();
const replayStarted = performance.now();
const cpuStarted = process.cpuUsage();
const report = await replayRuns({ policy: candidate, store: jsonlEventStore({ dir }) });
const cpu = process.cpuUsage(cpuStarted);
const wallMs = performance.now() - replayStarted;
console.log(
  JSON.stringify({
    runs,
    callsPerRun: perRun,
    calls: report.calls,
    wroteMs: Math.round(written),
    replayWallMs: Math.round(wallMs),
    replayCpuMs: Math.round((cpu.user + cpu.system) / 1000),
    usPerCall: +((wallMs * 1000) / report.calls).toFixed(2),
    goalMs: 5000,
    ratioToGoal: +(wallMs / 5000).toFixed(3),
    changed: {
      allowedToDenied: report.allowedToDenied,
      deniedToAllowed: report.deniedToAllowed,
      toAsk: report.toAsk,
      unchanged: report.unchanged,
    },
  }),
);
if (!process.env.KEEP) await rm(dir, { recursive: true, force: true });
else console.log(dir);
