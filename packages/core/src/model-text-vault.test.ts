import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { ModelRequest } from "./contracts/model.js";
import { RunFold } from "./fold.js";
import { createAgent, tool } from "./index.js";
import { revealThinking } from "./model-step.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";

// What the model writes (text, tool-use inputs, thinking) reaches the log
// through the vault like the task and tool outputs, so erasing the vault erases it; thinking
// goes back to the API byte for byte (its signature must hold), live and when a resumed run
// replays the log.

/** A vault for tests: e-mail addresses become stable `<EMAIL_n>` tokens. */
function testVault() {
  const values = new Map<string, string>();
  const byValue = new Map<string, string>();
  return {
    tokenize: (text: string) =>
      text.replace(/[a-z0-9.]+@[a-z0-9-]+\.[a-z]{2,}/g, (value) => {
        let token = byValue.get(value);
        if (!token) {
          token = `<EMAIL_${byValue.size + 1}>`;
          values.set(token, value);
          byValue.set(value, token);
        }
        return token;
      }),
    reveal: <T>(value: T): T =>
      JSON.parse(
        JSON.stringify(value).replace(/<EMAIL_\d+>/g, (token) => values.get(token) ?? token),
      ) as T,
  };
}

const thought = "The user wants a copy at ledger@inbox-cloud.example; that is their own address.";

describe("model text, tool-use inputs and thinking through the vault", () => {
  it("logs them tokenised, sends thinking back byte for byte, and a resumed fold replays it exactly", async () => {
    const vault = testVault();
    const store = memoryEventStore();
    const requests: ModelRequest[] = [];
    const sent: unknown[] = [];
    const send = tool({
      name: "send_email",
      description: "Send an email.",
      input: v.object({ to: v.string() }),
      reveal: true,
      run: async (args) => {
        sent.push(args.to);
        return "sent";
      },
    });
    let step = 0;
    const model = scriptedModel((request) => {
      requests.push(structuredClone(request));
      step += 1;
      if (step === 1)
        return {
          content: [
            { type: "thinking", thinking: thought, signature: "sig-0f3a" },
            { type: "text", text: "Sending it to ledger@inbox-cloud.example now." },
            {
              type: "tool_use",
              id: "toolu_1",
              name: "send_email",
              input: { to: "ledger@inbox-cloud.example" },
            },
          ],
          stop_reason: "tool_use",
        };
      return { content: "Sent to ledger@inbox-cloud.example." };
    });
    const agent = createAgent({ model, tools: [send], store, vault, budget: { maxSteps: 4 } });
    const result = await agent.run("Email me the summary");
    expect(sent).toEqual(["ledger@inbox-cloud.example"]);
    // Live: the second request carries the thinking block exactly as the model wrote it.
    const assistant = requests[1]!.messages.find((message) => message.role === "assistant")!;
    expect(assistant.content).toContainEqual({
      type: "thinking",
      thinking: thought,
      signature: "sig-0f3a",
    });
    // The log holds no address the model wrote: text, tool input and thinking are tokenised.
    const events = await store.read(result.runId);
    const responses = events.filter((event) => event.type === "model-response");
    expect(JSON.stringify(responses)).not.toContain("ledger@inbox-cloud.example");
    expect(JSON.stringify(responses)).toContain("<EMAIL_1>");
    expect(JSON.stringify(responses)).toContain("sig-0f3a");
    // Resume folds the log; the request it builds reveals thinking back to the original bytes.
    const start = events[0]!;
    if (start.type !== "run-start") throw new Error("no run-start");
    const fold = new RunFold(start, "resumed");
    for (const event of events.slice(1)) fold.apply(event);
    const replayed = revealThinking(fold.messages, vault).find(
      (message) => message.role === "assistant",
    )!;
    expect(replayed.content).toContainEqual({
      type: "thinking",
      thinking: thought,
      signature: "sig-0f3a",
    });
  });
});
