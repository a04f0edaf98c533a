import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonlEventStore } from "@loopguard/checkpoint";
import { createAgent, tool } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import { allow, deny, policy, shadow } from "@loopguard/policy";
import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../src/cli.js";

const sendEmail = tool({
  name: "send_email",
  description: "Send an email.",
  input: v.object({ to: v.string(), body: v.string() }),
  run: async () => "sent",
});

let root: string;
let runs: string;
let candidate: string;

async function cli(args: string[]): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const code = await main(args, (line) => lines.push(line));
  return { code, lines };
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "loopguard-replay-cli-"));
  runs = join(root, "runs");
  const store = jsonlEventStore({ dir: runs });
  for (const to of ["ann@acme-shop.com", "x@evil.example"]) {
    await createAgent({
      model: scriptedModel((_request, call) =>
        call === 1
          ? {
              content: [
                { type: "tool_use", id: "toolu_1", name: "send_email", input: { to, body: "hi" } },
              ],
            }
          : { content: [{ type: "text", text: "done" }], stop_reason: "end_turn" },
      ),
      tools: [sendEmail],
      store,
      gates: [policy([allow("*")])],
    }).run(`Email ${to}`);
  }
  await store.close?.();
  candidate = join(root, "candidate.json");
  await writeFile(
    candidate,
    JSON.stringify({
      version: 1,
      default: "allow",
      rules: [
        { effect: "deny", tool: "send_email", when: { arg: "to", domainNotIn: ["acme-shop.com"] } },
      ],
    }),
  );
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("loopguard replay", () => {
  it("prints the changed decisions and ends with the counts", async () => {
    const { code, lines } = await cli(["replay", "--policy", candidate, "--dir", runs]);
    expect(code).toBe(0);
    expect(lines.join("\n")).toMatch(/send_email\s+allow\s+deny policy_deny/);
    expect(lines.at(-1)).toBe(
      "2 calls re-judged: 1 allowed → denied, 0 denied → allowed, 0 → ask, 1 unchanged",
    );
  });

  it("--json prints the report for CI; --since leaves older runs out", async () => {
    const json = await cli(["replay", "--policy", candidate, "--dir", runs, "--json"]);
    const report = JSON.parse(json.lines.join("\n"));
    expect(report).toMatchObject({ calls: 2, allowedToDenied: 1, unchanged: 1 });
    expect(report.summary).toMatch(/^2 calls re-judged/);
    const later = await cli([
      "replay",
      "--policy",
      candidate,
      "--dir",
      runs,
      "--since",
      "2999-01-01",
    ]);
    expect(later.lines.at(-1)).toBe(
      "0 calls re-judged: 0 allowed → denied, 0 denied → allowed, 0 → ask, 0 unchanged",
    );
  });

  it("--max-denied fails the deploy check when too many calls would be denied", async () => {
    const over = await cli(["replay", "--policy", candidate, "--dir", runs, "--max-denied", "10"]);
    expect(over.code).toBe(1);
    expect(over.lines.at(-2)).toMatch(
      /50\.00% of the calls would be denied, over --max-denied 10%/,
    );
    expect(over.lines.at(-1)).toMatch(/^2 calls re-judged: 1 allowed → denied/);
    const under = await cli([
      "replay",
      "--policy",
      candidate,
      "--dir",
      runs,
      "--max-denied",
      "50%",
    ]);
    expect(under.code).toBe(0);
    await expect(
      cli(["replay", "--policy", candidate, "--dir", runs, "--max-denied", "lots"]),
    ).rejects.toThrow(/--max-denied must be a percentage/);
  });

  it("a candidate that does not load fails with the loader's path; a bad --since is a usage error", async () => {
    const bad = join(root, "bad.json");
    await writeFile(
      bad,
      '{"version":1,"default":"allow","rules":[{"effect":"deny","tool":"x","effect":"allow"}]}',
    );
    await expect(cli(["replay", "--policy", bad, "--dir", runs])).rejects.toThrow(
      /bad\.json: rules\[0\]\.effect: duplicate key "effect"/,
    );
    await expect(
      cli(["replay", "--policy", join(root, "missing.json"), "--dir", runs]),
    ).rejects.toThrow(/missing\.json: cannot read the policy file/);
    await expect(
      cli(["replay", "--policy", candidate, "--dir", runs, "--since", "soon"]),
    ).rejects.toThrow(/--since must be a date/);
  });

  it("a corrupt run log is reported and skipped, not fatal", async () => {
    await writeFile(
      join(runs, "run_0000000000000bad.jsonl"),
      '{"type":"run-start"\nnot json at all\n',
    );
    const { code, lines } = await cli(["replay", "--policy", candidate, "--dir", runs]);
    expect(code).toBe(0);
    expect(lines.join("\n")).toMatch(/skipped run run_0000000000000bad/);
    expect(lines.at(-1)).toMatch(/^2 calls re-judged: 1 allowed → denied/);
  });
});

describe("loopguard runs", () => {
  it("shows how many calls a shadow policy would have decided differently", async () => {
    const dir = join(root, "shadowed");
    const store = jsonlEventStore({ dir });
    const result = await createAgent({
      model: scriptedModel((_request, call) =>
        call === 1
          ? {
              content: [
                {
                  type: "tool_use",
                  id: "toolu_1",
                  name: "send_email",
                  input: { to: "x@evil.example", body: "hi" },
                },
              ],
            }
          : { content: [{ type: "text", text: "done" }], stop_reason: "end_turn" },
      ),
      tools: [sendEmail],
      store,
      gates: [policy([allow("*")]), shadow(policy([deny("send_email")]))],
    }).run("Email");
    await store.close?.();
    const { code, lines } = await cli(["runs", "--dir", dir]);
    expect(code).toBe(0);
    expect(lines[0]).toMatch(/shadow differences/);
    expect(lines.find((line) => line.startsWith(result.runId))).toMatch(/\s1\s*$/);
  });
});
