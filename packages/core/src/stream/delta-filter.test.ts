import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createDeltaFilter, defaultStreamHoldBack } from "./delta-filter.js";

// A stand-in redactor: emails, API keys and spaced phone numbers.
const redactText = (text: string) =>
  text
    .replace(/[\w.+-]+@[\w-]+(\.[\w-]+)+/g, "[EMAIL]")
    .replace(/sk-ant-[A-Za-z0-9_-]{8,}/g, "[SECRET]")
    .replace(/\+\d{1,3}( \d{3}){2} \d{4}/g, "[PHONE]");

const word = fc.oneof(
  { weight: 6, arbitrary: fc.stringMatching(/^[a-z]{1,9}$/) },
  { weight: 1, arbitrary: fc.stringMatching(/^[a-z]{1,12}@[a-z]{2,10}\.(com|org|co\.uk)$/) },
  { weight: 1, arbitrary: fc.stringMatching(/^sk-ant-[A-Za-z0-9]{20,90}$/) },
  { weight: 1, arbitrary: fc.stringMatching(/^\+1 \d{3} \d{3} \d{4}$/) },
);

async function run(text: string, cuts: number[], streamHoldBack?: number) {
  const filter = createDeltaFilter({
    transforms: [redactText],
    ...(streamHoldBack !== undefined ? { streamHoldBack } : {}),
  });
  const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
  let previous = 0;
  let shown = "";
  let maxHeld = 0;
  let fed = 0;
  for (const point of [...points, text.length]) {
    const piece = text.slice(previous, point);
    previous = point;
    fed += piece.length;
    shown += await filter.push(piece);
    maxHeld = Math.max(maxHeld, fed - shown.length);
  }
  shown += await filter.flush();
  return { shown, maxHeld };
}

describe("createDeltaFilter", () => {
  it("shows exactly what redacting the whole text shows, however the text is split into deltas", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(word, { minLength: 1, maxLength: 80 }),
        fc.array(fc.nat(), { maxLength: 60 }),
        async (words, cuts) => {
          const text = words.join(" ");
          const { shown } = await run(text, cuts);
          expect(shown).toBe(redactText(text));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("never shows a secret split across two deltas, even one character at a time", async () => {
    const secret = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
    const text = `Your key is ${secret} and mail me at jane.doe@example.com or call +1 415 555 0100 today. ${"More words here. ".repeat(20)}`;
    const cuts = Array.from({ length: text.length }, (_, index) => index);
    const { shown } = await run(text, cuts);
    expect(shown).not.toContain("sk-ant-api03");
    expect(shown).not.toContain("jane.doe");
    expect(shown).not.toContain("555 0100");
    expect(shown).toBe(redactText(text));
  });

  it("holds back at most the stated bound (streamHoldBack + 1 024 characters) and passes text through with nothing to apply", async () => {
    const text = "x".repeat(5000);
    const { maxHeld } = await run(
      text,
      Array.from({ length: 500 }, (_, index) => index * 10),
    );
    expect(maxHeld).toBeLessThanOrEqual(defaultStreamHoldBack + 1024 + 10);
    const plain = createDeltaFilter({ transforms: [] });
    expect(await plain.push("Hel")).toBe("Hel");
    expect(await plain.flush()).toBe("");
  });

  it("drives a streaming redactor (a web TransformStream) after the transforms", async () => {
    const upper = () =>
      new TransformStream<string, string>({
        transform: (chunk, controller) => controller.enqueue(chunk.toUpperCase()),
      });
    const filter = createDeltaFilter({
      transforms: [redactText],
      redactStream: upper,
      streamHoldBack: 4,
    });
    let shown = "";
    for (const piece of ["hello ", "bob@x.io ", "world"]) shown += await filter.push(piece);
    shown += await filter.flush();
    expect(shown).toBe("HELLO [EMAIL] WORLD");
  });

  it("rejects a holdback that is not a non-negative integer", () => {
    expect(() => createDeltaFilter({ transforms: [], streamHoldBack: -1 })).toThrow(
      /\[core\] streamHoldBack/,
    );
  });
});
