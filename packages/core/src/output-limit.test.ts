import { createHash } from "node:crypto";
import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { ModelRequest, Scanner, StoredEvent, ToolCallResultEvent, Vault } from "./index.js";
import { createAgent, defaultMaxOutputChars, tool } from "./index.js";
import { limitOutput, mapInSlices } from "./output-limit.js";
import { memoryEventStore, recordingExporter, scriptedModel } from "./testing/index.js";

const head = "HEAD-START alice@example.com ";
const middle = "MIDDLE-ONLY-IN-THE-CUT-PART";
const tail = " TAIL-END";
/** About a million characters, with markers at both ends and one only in the part cut away. */
const big = `${head}${"a".repeat(500_000)}${middle}${"b".repeat(500_000)}${tail}`;

const fetchPage = (maxOutputChars?: number) =>
  tool({
    name: "fetch_page",
    description: "Fetch a page.",
    input: v.object({ url: v.string() }),
    ...(maxOutputChars ? { maxOutputChars } : {}),
    run: () => big,
  });

/** Asks for the page once, then answers; keeps every request it got. */
function recordingModel() {
  const requests: ModelRequest[] = [];
  const model = scriptedModel((request: ModelRequest) => {
    requests.push(structuredClone(request));
    const last = request.messages.at(-1);
    const answered =
      Array.isArray(last?.content) && last.content.some((block) => block.type === "tool_result");
    return answered
      ? { content: "Read it." }
      : {
          content: [
            { type: "tool_use", id: "tu_1", name: "fetch_page", input: { url: "https://x.test" } },
          ],
        };
  });
  return { model, requests };
}

function toolResultOf(request: ModelRequest): string {
  for (const message of request.messages)
    if (Array.isArray(message.content))
      for (const block of message.content)
        if (block.type === "tool_result")
          return typeof block.content === "string" ? block.content : JSON.stringify(block.content);
  throw new Error("no tool_result in the request");
}

async function resultEvent(
  store: ReturnType<typeof memoryEventStore>,
  runId: string,
): Promise<ToolCallResultEvent> {
  const events = (await store.read(runId)) as StoredEvent[];
  return events.find((event) => event.type === "tool-call-result") as ToolCallResultEvent &
    StoredEvent;
}

/** No lone surrogate (String.prototype.isWellFormed, which this target's lib lacks). */
const wellFormed = (text: string) => !/\p{Surrogate}/u.test(text);

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

describe("tool output limits", () => {
  it("the model gets at most the cap, head and tail with a marker; the log keeps the digest; the scanner sees only the kept text", async () => {
    const { model, requests } = recordingModel();
    const store = memoryEventStore();
    const scanned: string[] = [];
    const scanner: Scanner = {
      name: "recording",
      scan: (text) => {
        scanned.push(text);
        return { verdict: "clean", score: 0, findings: [] };
      },
    };
    const exporter = recordingExporter();
    const agent = createAgent({
      model,
      tools: [fetchPage()],
      store,
      scanner,
      exporters: [exporter],
      maxOutputChars: 20_000,
    });
    const result = await agent.run("Read the page");
    expect(result.status).toBe("completed");
    const seen = toolResultOf(requests.at(-1)!);
    expect(seen.length).toBeLessThanOrEqual(20_000);
    expect(seen).toContain(head);
    expect(seen).toContain(tail);
    expect(seen).not.toContain(middle);
    expect(seen).toMatch(
      /\[loopguard: [\d,]+ of 1,000,065 characters cut from the middle of this fetch_page output \(limit 20,000; sha256 [0-9a-f]{16}\)\. To see the cut part, call fetch_page again for a narrower slice/,
    );
    const event = await resultEvent(store, result.runId);
    expect(event.content).toBe(seen);
    expect(event.cut).toEqual({
      chars: big.length,
      removedChars:
        big.length - (seen.length - seen.match(/\n\n\[loopguard:[^\]]*\]\n\n/)![0].length),
      sha256: sha256(big),
    });
    expect(event.fullOutput).toBeUndefined();
    const span = exporter.spans.find((item) => item.name === "execute_tool fetch_page")!;
    expect(span.attributes).toMatchObject({
      "loopguard.output.chars": big.length,
      "loopguard.output.sha256": sha256(big),
    });
    expect(scanned.length).toBe(1);
    expect(scanned[0]!.length).toBeLessThanOrEqual(20_000);
    expect(scanned[0]).not.toContain(middle);
  });

  it("a tool's own maxOutputChars wins over the agent's; the default is 100,000", async () => {
    for (const [agentCap, toolCap, expected] of [
      [undefined, 5_000, 5_000],
      [50_000, undefined, 50_000],
      [undefined, undefined, defaultMaxOutputChars],
    ] as const) {
      const { model, requests } = recordingModel();
      await createAgent({
        model,
        tools: [fetchPage(toolCap)],
        ...(agentCap ? { maxOutputChars: agentCap } : {}),
      }).run("Read the page");
      const seen = toolResultOf(requests.at(-1)!);
      expect(seen.length).toBeLessThanOrEqual(expected);
      expect(seen.length).toBeGreaterThan(expected - 10);
    }
  });

  it('outputLog "full" keeps the whole output in the log, tokenised by the vault; the model still gets the cut', async () => {
    const { model, requests } = recordingModel();
    const store = memoryEventStore();
    const vault: Vault = {
      tokenize: (text) => text.replaceAll("alice@example.com", "<EMAIL_1>"),
      reveal: (value) => value,
    };
    const result = await createAgent({
      model,
      tools: [fetchPage()],
      store,
      vault,
      maxOutputChars: 10_000,
      outputLog: "full",
    }).run("Read the page");
    const event = await resultEvent(store, result.runId);
    expect(event.fullOutput).toBe(big.replaceAll("alice@example.com", "<EMAIL_1>"));
    expect(event.cut!.sha256).toBe(sha256(big));
    const seen = toolResultOf(requests.at(-1)!);
    expect(seen.length).toBeLessThanOrEqual(10_000);
    expect(seen).toContain("<EMAIL_1>");
    expect(JSON.stringify(requests)).not.toContain("alice@example.com");
  });

  it("a 50 MB output: the model gets the cap, the log the digest, and the event loop keeps turning while it is cut", async () => {
    const huge = `${head}${"z".repeat(50 * 2 ** 20)}${tail}`;
    const { model, requests } = recordingModel();
    const store = memoryEventStore();
    const scanned: number[] = [];
    const agent = createAgent({
      model,
      tools: [
        tool({
          name: "fetch_page",
          description: "Fetch a page.",
          input: v.object({ url: v.string() }),
          run: () => huge,
        }),
      ],
      store,
      scanner: {
        name: "length",
        scan: (text) => {
          scanned.push(text.length);
          return { verdict: "clean", score: 0, findings: [] };
        },
      },
    });
    let ticks = 0;
    const ticker = setInterval(() => {
      ticks += 1;
    }, 0);
    const result = await agent.run("Read the page");
    clearInterval(ticker);
    expect(result.status).toBe("completed");
    const seen = toolResultOf(requests.at(-1)!);
    expect(seen.length).toBeLessThanOrEqual(defaultMaxOutputChars);
    expect(seen.startsWith(head)).toBe(true);
    expect(seen.endsWith(tail)).toBe(true);
    expect(JSON.stringify(requests).length).toBeLessThan(4 * defaultMaxOutputChars);
    const event = await resultEvent(store, result.runId);
    expect(event.cut).toMatchObject({ chars: huge.length, sha256: sha256(huge) });
    expect(scanned).toEqual([expect.any(Number)]);
    expect(scanned[0]).toBeLessThanOrEqual(defaultMaxOutputChars);
    // The 50 MB are hashed in 1 MB slices, with a turn of the event loop between them (a run with
    // no yield would leave the timer no turn at all).
    expect(ticks).toBeGreaterThan(0);
  }, 600_000);

  it("refuses a cap below 1,000 with the option's name", () => {
    expect(() => fetchPage(10)).toThrow(
      /\[core\] tool "fetch_page": maxOutputChars must be an integer of at least 1000, got 10/,
    );
    expect(() =>
      createAgent({ model: recordingModel().model, tools: [], maxOutputChars: 0 }),
    ).toThrow(/\[core\] createAgent: maxOutputChars must be an integer of at least 1000/);
    expect(() =>
      createAgent({
        model: recordingModel().model,
        tools: [],
        outputLog: "everything" as "full",
      }),
    ).toThrow(/\[core\] createAgent: outputLog must be "digest" or "full"/);
  });

  it("property: the cut fits the cap, keeps a head and a tail of the original, and never splits a character", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: "grapheme", minLength: 0, maxLength: 4_000 }),
        fc.integer({ min: 1_000, max: 3_000 }),
        async (text, cap) => {
          const { text: kept, cut } = await limitOutput(text, cap, "t");
          expect(kept.length).toBeLessThanOrEqual(cap);
          if (text.length <= cap) {
            expect(kept).toBe(text);
            expect(cut).toBeUndefined();
            return;
          }
          const marker = kept.match(/\n\n\[loopguard:[^\]]*\]\n\n/)!;
          const keptHead = kept.slice(0, marker.index);
          const keptTail = kept.slice(marker.index! + marker[0].length);
          expect(text.startsWith(keptHead)).toBe(true);
          expect(text.endsWith(keptTail)).toBe(true);
          expect(cut!.removedChars).toBe(text.length - keptHead.length - keptTail.length);
          expect(cut!.sha256).toBe(sha256(text));
          // No lone surrogate at either edge of the cut.
          expect(wellFormed(kept)).toBe(wellFormed(text));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("property: mapping in slices equals mapping the whole when the map is per line", async () => {
    const map = (piece: string) => piece.replaceAll(/\b\w+@\w+\.test\b/g, "<EMAIL>");
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom("x", " ", "\n", "bob@mail.test", "é"), { maxLength: 400 }),
        fc.integer({ min: 1, max: 3 }),
        async (parts, scale) => {
          // Past one slice (2^20 characters), so the pieces really are cut apart.
          // Lines: a text with no line break or space at all is cut where it must (documented).
          const unit = `${parts.join("")}\n`;
          const text = unit.repeat(Math.ceil((scale * 700_000) / Math.max(1, unit.length)));
          expect(await mapInSlices(text, map)).toBe(map(text));
        },
      ),
      { numRuns: 30 },
    );
  });
});
