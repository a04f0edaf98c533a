/**
 * An ancestor's gates judge a descendant's calls by tool name, so a tree in which a descendant
 * has a tool named like an ancestor's but with other arguments is refused at construction.
 */
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent } from "./agent.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";
import { tool } from "./tool.js";

const mailTo = () =>
  tool({
    name: "send_email",
    description: "Sends an email",
    input: v.object({ to: v.string(), body: v.string() }),
    run: () => "sent",
  });
const mailRecipient = () =>
  tool({
    name: "send_email",
    description: "Sends an email",
    input: v.object({ recipient: v.string(), body: v.string() }),
    run: () => "sent",
  });

describe("same-name tools across a tree", () => {
  it("refuses a child tool named like the parent's with other arguments, naming both agents", () => {
    const store = memoryEventStore();
    const child = createAgent({
      model: scriptedModel([]),
      tools: [mailRecipient()],
      agentId: "mailer",
      store,
    });
    expect(() =>
      createAgent({
        model: scriptedModel([]),
        tools: [mailTo(), child.asTool({ name: "delegate", description: "Delegates" })],
        agentId: "lead",
        store,
      }),
    ).toThrow(
      /\[core\] createAgent \(agent "lead"\): agent "mailer" has a tool "send_email" whose arguments differ from the tool "send_email" of its ancestor agent "lead"/,
    );
  });

  it("refuses it in a grandchild too", () => {
    const store = memoryEventStore();
    const leaf = createAgent({
      model: scriptedModel([]),
      tools: [mailRecipient()],
      agentId: "leaf",
      store,
    });
    const middle = createAgent({
      model: scriptedModel([]),
      tools: [leaf.asTool({ name: "work", description: "Works" })],
      agentId: "middle",
      store,
    });
    expect(() =>
      createAgent({
        model: scriptedModel([]),
        tools: [mailTo(), middle.asTool({ name: "delegate", description: "Delegates" })],
        agentId: "lead",
        store,
      }),
    ).toThrow(/agent "leaf" has a tool "send_email"/);
  });

  it("accepts the same tool (or another object with the same arguments) in parent and child, and siblings that differ", () => {
    const store = memoryEventStore();
    const child = createAgent({
      model: scriptedModel([]),
      tools: [mailTo()],
      agentId: "mailer",
      store,
    });
    const other = createAgent({
      model: scriptedModel([]),
      tools: [mailRecipient()],
      agentId: "other",
      store,
    });
    expect(() =>
      createAgent({
        model: scriptedModel([]),
        tools: [mailTo(), child.asTool({ name: "delegate", description: "Delegates" })],
        agentId: "lead",
        store,
      }),
    ).not.toThrow();
    expect(() =>
      createAgent({
        model: scriptedModel([]),
        tools: [
          child.asTool({ name: "one", description: "One" }),
          other.asTool({ name: "two", description: "Two" }),
        ],
        agentId: "lead",
        store,
      }),
    ).not.toThrow();
  });
});
