import { createAgent } from "@loopguard/core";
import { recordingExporter, scriptedModel } from "@loopguard/core/testing";
import { describe, expect, it } from "vitest";
import { genAiSpanOf } from "./gen-ai-span.js";

describe("streamed model calls", () => {
  it("carry gen_ai.request.stream, gen_ai.response.time_to_first_chunk (seconds) and the cache usage", async () => {
    const exporter = recordingExporter();
    const model = scriptedModel([
      {
        content: "Hello from a stream.",
        eventDelayMs: 5,
        usage: {
          input_tokens: 40,
          cache_read_input_tokens: 3000,
          cache_creation_input_tokens: 200,
        },
      },
    ]);
    const agent = createAgent({ model, tools: [], exporters: [exporter] });
    await agent.run("Hi");
    await agent.shutdown();
    const span = exporter.spans.find((candidate) => candidate.kind === "model");
    const planned = genAiSpanOf(span!, { captureContent: false });
    expect(planned.attributes["gen_ai.request.stream"]).toBe(true);
    const seconds = planned.attributes["gen_ai.response.time_to_first_chunk"] as number;
    expect(seconds).toBeGreaterThan(0.004);
    expect(seconds).toBeLessThan(5);
    expect(planned.attributes["gen_ai.usage.input_tokens"]).toBe(3240);
    expect(planned.attributes["gen_ai.usage.cache_read.input_tokens"]).toBe(3000);
    expect(planned.attributes["gen_ai.usage.cache_creation.input_tokens"]).toBe(200);
    expect(planned.attributes).not.toHaveProperty("loopguard.stream");
  });

  it("a model without stream() leaves gen_ai.request.stream out", async () => {
    const exporter = recordingExporter();
    const agent = createAgent({
      model: scriptedModel([{ content: "Hi." }], { noStream: true }),
      tools: [],
      exporters: [exporter],
    });
    await agent.run("Hi");
    await agent.shutdown();
    const span = exporter.spans.find((candidate) => candidate.kind === "model");
    const planned = genAiSpanOf(span!, { captureContent: false });
    expect(planned.attributes).not.toHaveProperty("gen_ai.request.stream");
    expect(planned.attributes).not.toHaveProperty("gen_ai.response.time_to_first_chunk");
  });
});
