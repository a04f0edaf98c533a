import { describe, expect, it } from "vitest";
import { supportVault } from "./support-vault.js";

describe("supportVault", () => {
  it("tokenises customer PII and keys, leaves company mail readable, reveals and replays", () => {
    const vault = supportVault();
    const text = vault.tokenize(
      'Email maya.lindqvist@mailbox.example or +1 415 555 0132, card 4111 1111 1111 1111, key sk-ant-api03-Xq7bT2mN9vR4kL8pW3sD6fG1hJ5cV0zA-EVALONLY, cc ops@acme-shop.com "total":89.99 A1001',
    );
    expect(text).not.toContain("maya.lindqvist");
    expect(text).not.toContain("415 555");
    expect(text).not.toContain("4111");
    expect(text).not.toContain("sk-ant-api03");
    expect(text).toContain("ops@acme-shop.com");
    expect(text).toContain("89.99");
    expect(vault.reveal({ to: "<EMAIL_1>" })).toEqual({ to: "maya.lindqvist@mailbox.example" });
    const again = supportVault({ entries: JSON.parse(JSON.stringify(vault.entries)) });
    expect(again.reveal(text)).toBe(vault.reveal(text));
    expect(again.tokenize("maya.lindqvist@mailbox.example")).toBe("<EMAIL_1>");
    expect(JSON.stringify(again)).not.toContain("maya");
  });
});
