import { describe, expect, it } from "vitest";
import { patternDetector } from "./pattern-detector.js";
import { redact } from "./redact.js";
import { RedactError, RedactOptionsError } from "./redact-error.js";
import { createRedactionScope } from "./redaction-scope.js";

const typesIn = (text: string) => redact(text).findings.map((finding) => finding.type);

describe("redact: detectors", () => {
  it.each([
    ["write to jane.doe+news@acme-shop.co.uk today", "EMAIL"],
    ["user@xn--80ak6aa92e.com", "EMAIL"],
    ["call (415) 555-0132 now", "PHONE"],
    ["international +44 7700 900123", "PHONE"],
    ["Mobile: 0612 345 67 89", "PHONE"],
    ["desk +1-415-555-0199x42", "PHONE"],
    ["card 4111 1111 1111 1111 exp", "CREDIT_CARD"],
    ["amex 3782-822463-10005", "CREDIT_CARD"],
    ["ssn 078-05-1123.", "US_SSN"],
    ["iban GB82 WEST 1234 5698 7654 32 please", "IBAN"],
    ["iban de89370400440532013000", "IBAN"],
    ["from 192.168.0.1, ok", "IP_ADDRESS"],
    ["gateway [2001:db8::1]:8080", "IP_ADDRESS"],
    ["link-local fe80::1%eth0 up", "IP_ADDRESS"],
    ["mac 00:1A:2B:3C:4D:5E", "MAC_ADDRESS"],
    ["token 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", "SECRET"],
    ["AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "SECRET"],
    ["key sk_live_51HqLyjWDarjtT1zdp7dcXAMP", "SECRET"],
    ["Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "SECRET"],
    ["postgres://app:s3cr3t-pw@db.internal:5432/shop", "SECRET"],
    ['{"password":"hunter2"}', "SECRET"],
    ["DB_PASSWORD=correct-horse", "SECRET"],
    ["--token abcdef123456", "SECRET"],
  ])("finds %j as %s", (text, type) => {
    expect(typesIn(text)).toContain(type);
  });

  it.each([
    ["Luhn-invalid card", "4012-8888-8888-1882"],
    ["SSN with area 666", "666-12-3456"],
    ["SSN with group 00", "078-00-1123"],
    ["SSN with mixed separators", "693-09.4444"],
    ["IBAN with a bad check digit", "GB82 WEST 1234 5698 7654 33"],
    ["octet above 255", "300.168.1.1"],
    ["two double colons", "2001::db8::1"],
    ["a time", "at 12:34:56"],
    ["a C++ scope", "std::cout << x"],
    ["a date and time", "2019-11-04 09:41:07"],
    ["a version", "version 1.2.3"],
    ["token counts", '{"max_tokens": 1024, "input_tokens": 12}'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the text is a config template on purpose
    ["a template placeholder", "password: ${DB_PASSWORD}"],
    ["an email without a TLD", "info@presidio."],
    ["Stripe publishable key", "pk_live_j5krY8XTgIcDaHDb3YrsAfCl"],
    ["an invalid JWT", "eyJAAAA.eyJBBB"],
  ])("leaves alone %s", (_label, text) => {
    expect(redact(text).findings).toEqual([]);
    expect(redact(text).text).toBe(text);
  });

  it("reports spans in the original text and replaces them with type placeholders", () => {
    const text = "Mail jane@acme.io, card 4111 1111 1111 1111";
    const { text: redacted, findings } = redact(text);
    expect(redacted).toBe("Mail [EMAIL], card [CREDIT_CARD]");
    expect(findings.map((finding) => text.slice(finding.start, finding.end))).toEqual([
      "jane@acme.io",
      "4111 1111 1111 1111",
    ]);
  });

  it("keeps a card found before trailing digits (a CVV)", () => {
    expect(redact("4111111111111111 123").text).toBe("[CREDIT_CARD] 123");
  });

  it("redacts only the password of a URL and the value of an assignment", () => {
    expect(redact("https://bob:pa55word@example.com/x").text).toBe(
      "https://bob:[SECRET]@example.com/x",
    );
    expect(redact('password = "value with spaces"').text).toBe('password = "[SECRET]"');
  });

  it("redacts a private key block, and one with no END line to the end of the text", () => {
    const key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----";
    expect(redact(`key:\n${key}\nafter`).text).toBe("key:\n[SECRET]\nafter");
    expect(redact("x -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg").text).toBe("x [SECRET]");
  });

  it("writes stable indexed tokens within a scope", () => {
    const scope = createRedactionScope();
    const first = redact("a@b.io then c@d.io then a@b.io", { placeholder: "indexed", scope });
    expect(first.text).toBe("<EMAIL_1> then <EMAIL_2> then <EMAIL_1>");
    expect(redact("again c@d.io", { placeholder: "indexed", scope }).text).toBe("again <EMAIL_2>");
    expect(redact("fresh c@d.io", { placeholder: "indexed" }).text).toBe("fresh <EMAIL_1>");
  });

  it("takes a placeholder function and a subset of types", () => {
    const text = "a@b.io 10.0.0.1";
    expect(redact(text, { placeholder: (finding) => `<${finding.type.toLowerCase()}>` }).text).toBe(
      "<email> <ip_address>",
    );
    expect(redact(text, { types: ["IP_ADDRESS"] }).text).toBe("a@b.io [IP_ADDRESS]");
  });

  it("runs custom detectors, with capture groups and validation", () => {
    const employee = patternDetector({
      type: "EMPLOYEE_ID",
      pattern: /\bEMP-(\d{6})\b/,
      group: 1,
      validate: (value) => value !== "000000",
    });
    expect(redact("ask EMP-123456 not EMP-000000", { detectors: [employee] }).text).toBe(
      "ask EMP-[EMPLOYEE_ID] not EMP-000000",
    );
  });

  it("merges overlapping findings into one, typed by the higher priority", () => {
    const { findings } = redact("password=4111111111111111");
    expect(findings).toHaveLength(1);
    expect(findings[0]!.type).toBe("SECRET");
  });
});

describe("redact: failures", () => {
  it("rejects bad options with a RedactOptionsError that says what to do", () => {
    expect(() => redact("x", { types: ["EMAIL", "NAME" as "EMAIL"] })).toThrow(
      /\[redact\].*unknown type "NAME"/,
    );
    expect(() => redact("x", { placeholder: "stars" as "type" })).toThrow(RedactOptionsError);
    expect(() => redact("x", { typo: true } as never)).toThrow(/unknown option "typo"/);
    expect(() => redact(42 as unknown as string)).toThrow(/takes a string/);
    expect(() => patternDetector({ type: "lower", pattern: /x/ })).toThrow(/upper snake case/);
  });

  it("brands its errors so isInstance works across copies", () => {
    let caught: unknown;
    try {
      redact("x", { types: "EMAIL" as never });
    } catch (error) {
      caught = error;
    }
    expect(RedactError.isInstance(caught)).toBe(true);
    expect(RedactError.isInstance(new Error("[redact] x"))).toBe(false);
  });

  it("fails closed when a custom detector reports a span outside the text", () => {
    const broken = { type: "BROKEN", name: "broken", find: () => [{ start: 0, end: 99 }] };
    expect(() => redact("short", { detectors: [broken] })).toThrow(
      /outside a text of 5 characters/,
    );
  });
});
