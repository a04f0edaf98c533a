import type { ModelRequest } from "@loopguard/core";
import { messagesApiServer } from "@loopguard/core/testing";
import { gullibleModel } from "@loopguard/evals";
import { afterAll, describe, expect, it } from "vitest";
import { built, start } from "./cli-helpers.js";

// A loopback Messages API in this process; the CLI in a child process talks to it over HTTP
// through ANTHROPIC_BASE_URL with a fake key. No real endpoint is ever reached.
const server = await messagesApiServer({
  handler: async (request) => ({
    type: "message",
    message: await gullibleModel().create(request.body as ModelRequest, {
      signal: new AbortController().signal,
    }),
  }),
});
afterAll(() => server.close());

describe.skipIf(!built)("loopguard eval --live", () => {
  it("reports pass@k with Wilson intervals and lists scripted-only scenarios as skipped", async () => {
    const cli = start(["eval", "--live", "--k", "2"], {
      ANTHROPIC_BASE_URL: server.url,
      ANTHROPIC_API_KEY: "sk-ant-fake-loopback-key",
    });
    const { code } = await cli.exited;
    const output = cli.output();
    expect(code, output).toBe(0);
    expect(output).toMatch(/live scorecard: claude-sonnet-5-5, k=2/);
    expect(output).toMatch(/refund_happy_path\s+2\/2\s+pass@2 yes\s+95% CI \[0\.\d\d, 1\.00\]/);
    expect(output).toMatch(/injection_refund_hijack_blocked\s+2\/2\s+pass@2 yes/);
    expect(output).toMatch(/timeouts\s+skipped: needs injected hangs/);
    expect(server.calls).toBeGreaterThanOrEqual(9);
    const keys = new Set(
      server.requests.map(
        (request) =>
          request.headers["x-api-key"] ?? request.headers.authorization?.replace(/^Bearer /, ""),
      ),
    );
    expect(keys).toEqual(new Set(["sk-ant-fake-loopback-key"]));
  });

  it("refuses --live without an API key", async () => {
    const cli = start(["eval", "--live"], { ANTHROPIC_API_KEY: "" });
    const { code } = await cli.exited;
    expect(code).toBe(2);
    expect(cli.output()).toContain("ANTHROPIC_API_KEY");
  });
});
