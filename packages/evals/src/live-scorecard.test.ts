import type { ModelRequest } from "@loopguard/core";
import { messagesApiServer } from "@loopguard/core/testing";
import { afterAll, describe, expect, it } from "vitest";
import { formatLiveScorecard, liveScorecard, wilsonInterval } from "./live-scorecard.js";
import { gullibleModel } from "./support-desk/gullible-model.js";

// A loopback Messages API whose "model" is the gullible support agent: the live path runs end
// to end through claudeModel and the real SDK over HTTP, and never reaches a real endpoint.
// (The server's own `apiKey` check reads only x-api-key, and SDK 1.10 sends a Bearer token,
// so the key is checked below instead.)
const server = await messagesApiServer({
  handler: async (request) => {
    const response = await gullibleModel().create(request.body as ModelRequest, {
      signal: new AbortController().signal,
    });
    return { type: "message", message: response };
  },
});
afterAll(() => server.close());

describe("liveScorecard (offline, through a loopback Messages API)", () => {
  it("reports pass@k with Wilson intervals and lists scripted-only scenarios as skipped", async () => {
    const card = await liveScorecard({
      k: 3,
      baseURL: server.url,
      apiKey: "sk-ant-test-loopback",
    });
    expect(server.calls).toBeGreaterThan(0);
    const keys = server.requests.map(
      (request) =>
        request.headers["x-api-key"] ?? request.headers.authorization?.replace(/^Bearer /, ""),
    );
    expect(new Set(keys)).toEqual(new Set(["sk-ant-test-loopback"]));
    const happy = card.results.find((result) => result.name === "refund_happy_path");
    expect(happy).toMatchObject({ trials: 3, successes: 3, passAtK: true });
    expect(happy!.interval).toEqual(wilsonInterval(3, 3));
    expect(happy!.interval.low).toBeGreaterThan(0.4);
    expect(happy!.interval.high).toBe(1);
    // Scenarios that need scripted faults are skipped with the reason, never counted as passed.
    expect(card.skipped).toContainEqual({ name: "timeouts", why: "needs injected hangs" });
    expect(card.skipped.map((skip) => skip.name)).toContain("crash_resume_exactly_once");
    const names = [...card.results, ...card.skipped].map((item) => item.name);
    expect(new Set(names).size).toBe(names.length);
    // Every request the SDK sent was a real Messages API request with the tools.
    const body = server.requests[0]!.body as {
      tools: Array<{ name: string }>;
      messages: unknown[];
    };
    expect(body.tools.map((tool) => tool.name)).toContain("issue_refund");
    // The vault is on: the model never saw the customer's email address.
    expect(server.requests.some((request) => request.rawBody.includes("maya.lindqvist"))).toBe(
      false,
    );
    const text = formatLiveScorecard(card);
    expect(text).toMatch(/refund_happy_path\s+3\/3\s+pass@3 yes\s+95% CI \[0\.\d\d, 1\.00\]/);
    expect(text).toMatch(/timeouts\s+skipped: needs injected hangs/);
    expect(card.ok).toBe(true);
  });

  it("validates k", async () => {
    await expect(liveScorecard({ k: 0 })).rejects.toThrow(/k must be an integer from 1 to 100/);
  });
});
