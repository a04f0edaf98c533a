import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { redact } from "./redact.js";
import { createVault } from "./vault.js";

describe("vault", () => {
  it("tokenises for the model and reveals for the tool", () => {
    const vault = createVault();
    const prompt = vault.redact(
      "Refund jane@acme.io to card 4111 1111 1111 1111; cc jane@acme.io",
    ).text;
    expect(prompt).toBe("Refund <EMAIL_1> to card <CREDIT_CARD_1>; cc <EMAIL_1>");
    const toolCall = {
      name: "issue_refund",
      input: {
        email: "<EMAIL_1>",
        card: "<CREDIT_CARD_1>",
        note: "for <EMAIL_1>",
        other: "<EMAIL_9>",
      },
    };
    expect(vault.reveal(toolCall)).toEqual({
      name: "issue_refund",
      input: {
        email: "jane@acme.io",
        card: "4111 1111 1111 1111",
        note: "for jane@acme.io",
        other: "<EMAIL_9>",
      },
    });
    expect(toolCall.input.email).toBe("<EMAIL_1>");
    expect(vault.size).toBe(2);
  });

  it("reveals a non-string secret under a sensitive key as the original value", () => {
    const vault = createVault();
    const redacted = vault.redactDeep({ password: 123456, user: "a@b.io" }) as Record<
      string,
      unknown
    >;
    expect(redacted).toEqual({ password: "<SECRET_1>", user: "<EMAIL_1>" });
    expect(vault.reveal(redacted)).toEqual({ password: 123456, user: "a@b.io" });
  });

  it("has the tokenize/reveal shape core's vault option takes", () => {
    const vault = createVault();
    const tokenized = vault.tokenize("ship to jane@acme.io");
    expect(tokenized).toBe("ship to <EMAIL_1>");
    expect(vault.tokenize("again jane@acme.io")).toBe("again <EMAIL_1>");
    expect(vault.reveal(tokenized)).toBe("ship to jane@acme.io");
  });

  it("works as the scope of redact", () => {
    const vault = createVault();
    const text = redact("ip 10.0.0.1", { placeholder: "indexed", scope: vault }).text;
    expect(vault.reveal(text)).toBe("ip 10.0.0.1");
  });

  it("never shows a value in JSON, inspect or string form", () => {
    const vault = createVault();
    vault.redact("jane@acme.io 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");
    const shown = [
      JSON.stringify({ vault }),
      inspect(vault, { showHidden: true, depth: 10 }),
      String(vault),
      JSON.stringify(Object.entries(vault)),
    ];
    for (const text of shown) {
      expect(text).not.toContain("jane@acme.io");
      expect(text).not.toContain("ghp_");
    }
    expect(JSON.stringify(vault)).toBe('{"kind":"redaction-vault","size":2}');
  });

  it("forgets on clear and rejects placeholder options", () => {
    const vault = createVault();
    vault.redact("a@b.io");
    vault.clear();
    expect(vault.reveal("<EMAIL_1>")).toBe("<EMAIL_1>");
    expect(() => createVault({ placeholder: "type" } as never)).toThrow(/indexed tokens/);
  });
});
