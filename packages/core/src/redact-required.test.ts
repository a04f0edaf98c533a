import { describe, expect, it } from "vitest";
import { createAgent } from "./index.js";
import { recordingExporter, scriptedModel } from "./testing/index.js";

const exporter = (captureContent: boolean | undefined, redactsContent?: boolean) => ({
  ...recordingExporter(),
  name: "content-exporter",
  ...(captureContent === undefined ? {} : { captureContent }),
  ...(redactsContent === undefined ? {} : { redactsContent }),
});
const model = () => scriptedModel([{ content: [{ type: "text", text: "done" }] }]);

describe("safe by default: content capture needs a redactor", () => {
  it("refuses an exporter that captures content when the agent has no redact, naming createRedactor()", () => {
    expect(() => createAgent({ model: model(), tools: [], exporters: [exporter(true)] })).toThrow(
      /\[core\] createAgent: exporter "content-exporter" captures message content but the agent has no redact: pass redact: createRedactor\(\) from @loopguard\/redact \(or redact: false to export raw content on purpose\)/,
    );
  });

  it("accepts it with a redactor, with redact: false, or when the exporter redacts content itself", async () => {
    const redactor = (value: unknown) => value;
    for (const options of [
      { exporters: [exporter(true)], redact: redactor },
      { exporters: [exporter(true)], redact: false as const },
      { exporters: [exporter(true, true)] },
      { exporters: [exporter(false)] },
    ]) {
      const agent = createAgent({ model: model(), tools: [], ...options });
      expect((await agent.run("hi")).status).toBe("completed");
    }
  });

  it("says what redact must be when it is neither a function nor false", () => {
    expect(() => createAgent({ model: model(), tools: [], redact: "yes" as never })).toThrow(
      /redact must be a function .* or false/,
    );
  });
});
