import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { guardTool, withRun } from "./guard.js";
import { recordingExporter } from "./testing/recording-exporter.js";
import { tool } from "./tool.js";

const lookup = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ order_id: v.string() }),
  run: (args) => `Order ${args.order_id}: delivered to alice@example.com`,
});

describe("withRun with exporters: the guard path's spans", () => {
  it("exports an invoke_agent root with an execute_tool child per guarded call, redacted, and survives a failing exporter", async () => {
    const exporter = recordingExporter();
    const failing = recordingExporter({ fail: "throw" });
    const errors: string[] = [];
    const guarded = guardTool(lookup);
    await withRun(
      {
        agentId: "desk",
        exporters: [exporter, failing],
        redact: (value) =>
          JSON.parse(JSON.stringify(value).replaceAll("alice@example.com", "[EMAIL]")),
        onError: (_error, where) => errors.push(where),
      },
      async () => {
        await guarded({ order_id: "A1" }, { toolUseId: "tu_1" });
        await guarded({ order_id: "A2" }, { toolUseId: "tu_2" });
      },
    );
    const names = exporter.spans.map((span) => span.name).sort();
    expect(names).toEqual([
      "execute_tool lookup_order",
      "execute_tool lookup_order",
      "invoke_agent desk",
    ]);
    const root = exporter.spans.find((span) => span.name === "invoke_agent desk")!;
    for (const span of exporter.spans.filter((item) => item.name.startsWith("execute_tool")))
      expect(span.parentSpanId).toBe(root.spanId);
    const exported = JSON.stringify(exporter.spans);
    expect(exported).not.toContain("alice@example.com");
    expect(exported).toContain("[EMAIL]");
    expect(errors.some((where) => where === "exporter recording")).toBe(true);
  });
});
