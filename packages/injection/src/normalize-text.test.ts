import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { normalizeText } from "./normalize-text.js";

// Look-alike letters of other scripts are folded where they disguise a Latin word: beside Latin
// letters or ASCII digits (a property test of the taint gate found "о00.example", a Cyrillic о
// before digits, passing as a domain nobody had seen). A word wholly in another script stays.
const lookAlikes: Record<string, string> = { о: "o", а: "a", е: "e", р: "p", с: "c", х: "x" };

describe("normalizeText folds disguising look-alikes", () => {
  it("folds a look-alike beside ASCII digits or Latin letters, whatever its place", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z0-9]{1,6}$/),
        fc.constantFrom(...Object.keys(lookAlikes)),
        fc.nat(6),
        (word, glyph, at) => {
          const index = Math.min(at, word.length);
          const disguised = `${word.slice(0, index)}${glyph}${word.slice(index)}`;
          const plain = `${word.slice(0, index)}${lookAlikes[glyph]}${word.slice(index)}`;
          expect(normalizeText(`mail ${disguised}.example`).text).toBe(`mail ${plain}.example`);
        },
      ),
    );
  });

  it("leaves words wholly in another script as they are", () => {
    expect(normalizeText("Раздел 3 года").text).toBe("раздел 3 года");
    expect(normalizeText("Ответ: сообщение").text).toBe("ответ: сообщение");
  });
});
