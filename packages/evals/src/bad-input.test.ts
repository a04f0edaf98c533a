// Every public factory of @loopguard/evals, fed input it cannot use: each must throw a loopguard
// error whose message starts with `[evals]` and says what to pass. A misspelt sabotage name is
// the dangerous case: accepted silently, it would leave a defence on while a test believes it
// proved the scorecard fails without it.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { thrownError as thrown } from "@loopguard/core/testing";
import { describe, expect, it } from "vitest";
import {
  crashAfter,
  fixedApprover,
  formatCorpusReport,
  formatLiveScorecard,
  formatScorecard,
  gullibleModel,
  liveScorecard,
  loadCorpus,
  loadPackages,
  readCorpus,
  runCorpus,
  runScenarios,
  scenario,
  supportDefences,
  supportDesk,
  supportVault,
  wilsonInterval,
} from "./index.js";

// biome-ignore lint/suspicious/noExplicitAny: these tests pass what the types forbid.
const bad = (value: unknown): any => value;

const packages = await loadPackages();
const meta = { name: "x", category: "faults", title: "t" } as const;

describe("bad input to every public factory of @loopguard/evals", () => {
  const cases: [string, () => unknown, RegExp][] = [
    [
      "scenario: name in camelCase",
      () => scenario({ ...meta, name: "myCase" }, () => {}),
      /meta\.name must be snake_case/,
    ],
    [
      "scenario: unknown category",
      () => scenario({ ...meta, category: bad("speed") }, () => {}),
      /category must be one of .*run_guard, delegation, got "speed"/,
    ],
    [
      "scenario: requires an unknown package",
      () => scenario({ ...meta, requires: bad(["otel"]) }, () => {}),
      /requires must be an array of "policy"/,
    ],
    ["scenario: no title", () => scenario({ ...meta, title: " " }, () => {}), /one-line title/],
    ["scenario: fn a string", () => scenario(meta, bad("run")), /fn must be a function/],
    [
      "supportDefences: no packages",
      () => supportDefences(bad(undefined)),
      /packages must be what loadPackages\(\) resolves to/,
    ],
    [
      "supportDefences: misspelt sabotage",
      () => supportDefences(packages, { sabotage: bad(["taint"]) }),
      /unknown sabotage "taint"; known: taint_gate/,
    ],
    [
      "supportDefences: sabotage a string",
      () => supportDefences(packages, { sabotage: bad("vault") }),
      /sabotage must be an array/,
    ],
    [
      "supportDefences: approvalAboveUsd -1",
      () => supportDefences(packages, { approvalAboveUsd: -1 }),
      /approvalAboveUsd must be a finite amount/,
    ],
    [
      "fixedApprover: answer maybe",
      () => fixedApprover(bad("maybe")),
      /answer must be "approve" or "deny", got "maybe"/,
    ],
    [
      "fixedApprover: empty approver",
      () => fixedApprover("approve", ""),
      /approver must be a non-empty name/,
    ],
    ["crashAfter: no store", () => crashAfter(bad(undefined), 1), /store must be an EventStore/],
    [
      "crashAfter: n 0",
      () => crashAfter(bad({ append() {}, read() {} }), 0),
      /n must be a positive integer/,
    ],
    [
      "crashAfter: onCrash a number",
      () => crashAfter(bad({ append() {}, read() {} }), 1, bad(137)),
      /onCrash must be a function/,
    ],
    [
      "supportDesk: options a string",
      () => supportDesk(bad("poisoned")),
      /options must be an object/,
    ],
    [
      "supportDesk: fault for an unknown tool",
      () => supportDesk({ faults: bad({ refund: ["fail"] }) }),
      /unknown tool "refund"/,
    ],
    [
      "supportDesk: unknown fault",
      () => supportDesk({ faults: bad({ issue_refund: ["boom"] }) }),
      /faults\.issue_refund must be an array of ok, transient/,
    ],
    [
      "supportDesk: timeout 0",
      () => supportDesk({ timeoutMs: { search_kb: 0 } }),
      /timeoutMs\.search_kb must be a positive number/,
    ],
    [
      "supportDesk: latency NaN",
      () => supportDesk({ latencyMs: Number.NaN }),
      /latencyMs must be a number of milliseconds/,
    ],
    [
      "supportDesk: ledger {}",
      () => supportDesk({ ledger: bad({}) }),
      /ledger must be a sideEffectLedger\(\)/,
    ],
    ["gullibleModel: options null", () => gullibleModel(bad(null)), /options must be an object/],
    [
      "gullibleModel: orderId a number",
      () => gullibleModel({ orderId: bad(1001) }),
      /orderId must be a non-empty string/,
    ],
    [
      "gullibleModel: obey yes",
      () => gullibleModel({ obey: bad("yes") }),
      /obey must be true or false/,
    ],
    [
      "gullibleModel: refundAmount -5",
      () => gullibleModel({ refundAmount: -5 }),
      /refundAmount must be a positive amount/,
    ],
    [
      "supportVault: readableDomains a string",
      () => supportVault({ readableDomains: bad("acme-shop.com") }),
      /readableDomains must be an array/,
    ],
    [
      "supportVault: entries an object",
      () => supportVault({ entries: bad({}) }),
      /entries must be the array/,
    ],
    [
      "supportVault: onEntry a string",
      () => supportVault({ onEntry: bad("save") }),
      /onEntry must be a function/,
    ],
    [
      "supportVault: entries from another run",
      () => supportVault({ entries: [{ type: "EMAIL", token: "<EMAIL_9>", value: "a@b.io" }] }),
      /do not replay to the same tokens/,
    ],
    ["wilsonInterval: NaN successes", () => wilsonInterval(Number.NaN, 5), /need whole numbers/],
    [
      "wilsonInterval: more successes than trials",
      () => wilsonInterval(6, 5),
      /need whole numbers/,
    ],
    ["wilsonInterval: z 0", () => wilsonInterval(1, 5, 0), /z > 0/],
    ["readCorpus: a number", () => readCorpus(bad(3)), /^\[evals\] readCorpus\(path\)/],
    [
      "readCorpus: a missing file",
      () => readCorpus("/nonexistent/injection.jsonl"),
      /does not exist/,
    ],
    [
      "formatScorecard: nothing",
      () => formatScorecard(bad(undefined)),
      /card must be the scorecard runScenarios\(\) resolves to/,
    ],
    [
      "formatLiveScorecard: nothing",
      () => formatLiveScorecard(bad({})),
      /liveScorecard\(\) resolves to/,
    ],
    [
      "formatCorpusReport: nothing",
      () => formatCorpusReport(bad(null)),
      /runCorpus\(\) resolves to/,
    ],
  ];

  for (const [name, make, message] of cases) {
    it(name, () => {
      const error = thrown(make);
      expect(error.message).toMatch(/^\[evals\] /);
      expect(error.message).toMatch(message);
    });
  }

  it("loadCorpus names the line that is not JSON, counting blank lines, and keeps the rest", () => {
    const path = join(mkdtempSync(join(tmpdir(), "lg-corpus-")), "injection.jsonl");
    writeFileSync(
      path,
      `${JSON.stringify({ id: "a", text: "hi", label: "benign", subset: "s" })}\n\n{oops\n`,
    );
    const { records, skipped } = loadCorpus(path);
    expect(records.map((record) => record.id)).toEqual(["a"]);
    expect(skipped).toHaveLength(1);
    expect(skipped[0]!.line).toBe(3);
    expect(skipped[0]!.problem).toContain(`${path}:3 is not JSON`);
    expect(readCorpus(path)).toEqual(records);
  });

  it("the async runners reject bad options before running anything", async () => {
    await expect(runScenarios(bad("all"))).rejects.toThrow(/scenarios must be an array/);
    await expect(runScenarios([bad({ name: "x" })])).rejects.toThrow(
      /scenarios\[0\] is not a scenario; make it with scenario\(meta, fn\)/,
    );
    await expect(runScenarios([], { only: bad("refund_happy_path") })).rejects.toThrow(
      /only must be an array of scenario names/,
    );
    await expect(runScenarios([], { sabotage: bad(["scaner"]) })).rejects.toThrow(
      /^\[evals\] runScenarios: unknown sabotage "scaner"/,
    );
    await expect(runCorpus(bad(null))).rejects.toThrow(/options must be an object/);
    await expect(runCorpus({ records: bad("x") })).rejects.toThrow(/records must be an array/);
    await expect(runCorpus({ records: [], sabotage: bad(["vaults"]) })).rejects.toThrow(
      /unknown sabotage "vaults"/,
    );
    await expect(liveScorecard(bad({ k: 0 }))).rejects.toThrow(
      /k must be an integer from 1 to 100/,
    );
    await expect(liveScorecard(bad(null))).rejects.toThrow(/pass \{ k \}/);
  });
});
