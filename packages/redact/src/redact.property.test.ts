import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createRedactor } from "./create-redactor.js";
import { redact } from "./redact.js";
import { redactDeep } from "./redact-deep.js";
import { createRedactionStream } from "./redaction-stream.js";

// Generators of values that must never survive redaction, each valid for its type.

const digits = (length: number) =>
  fc
    .array(fc.integer({ min: 0, max: 9 }), { minLength: length, maxLength: length })
    .map((list) => list.join(""));
const chars = (alphabet: string, min: number, max = min) =>
  fc
    .array(fc.constantFrom(...alphabet.split("")), { minLength: min, maxLength: max })
    .map((list) => list.join(""));
const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const BASE64URL = `${ALNUM}-_`;

function luhnComplete(body: string): string {
  let sum = 0;
  for (let index = 0; index < body.length; index++) {
    let digit = Number(body[body.length - 1 - index]);
    if (index % 2 === 0) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return body + String((10 - (sum % 10)) % 10);
}

const card = fc
  .tuple(
    fc.constantFrom(
      ["4", 16],
      ["51", 16],
      ["55", 16],
      ["2221", 16],
      ["34", 15],
      ["37", 15],
      ["6011", 16],
      ["35", 16],
      ["4", 13],
    ),
    digits(18),
    fc.constantFrom("", " ", "-"),
  )
  .map(([[prefix, length], random, separator]) => {
    const number = luhnComplete(
      prefix + random.slice(0, (length as number) - (prefix as string).length - 1),
    );
    return number.replace(/(\d{4})(?=\d)/g, `$1${separator}`);
  });

function ibanWithCheck(country: string, bban: string): string {
  const numeric = `${bban}${country}00`.replace(/[A-Z]/g, (letter) =>
    String(letter.charCodeAt(0) - 55),
  );
  let remainder = 0;
  for (const digit of numeric) remainder = (remainder * 10 + Number(digit)) % 97;
  return `${country}${String(98 - remainder).padStart(2, "0")}${bban}`;
}

const iban = fc
  .tuple(
    fc.oneof(
      fc
        .tuple(fc.constant("GB"), chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 4), digits(14))
        .map(([c, bank, account]) => [c, bank + account] as const),
      fc.tuple(fc.constant("DE"), digits(18)).map(([c, account]) => [c, account] as const),
      fc.tuple(fc.constant("FR"), digits(23)).map(([c, account]) => [c, account] as const),
      fc
        .tuple(fc.constant("NL"), chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 4), digits(10))
        .map(([c, bank, account]) => [c, bank + account] as const),
    ),
    fc.boolean(),
  )
  .map(([[country, bban], grouped]) => {
    const compact = ibanWithCheck(country, bban);
    return grouped ? compact.replace(/(.{4})(?=.)/g, "$1 ") : compact;
  });

const ssn = fc
  .tuple(
    fc.integer({ min: 1, max: 899 }).filter((area) => area !== 666),
    fc.integer({ min: 1, max: 99 }),
    fc.integer({ min: 1, max: 9999 }),
    fc.constantFrom("-", " ", "."),
  )
  .map(([area, group, serial, separator]) =>
    [
      String(area).padStart(3, "0"),
      String(group).padStart(2, "0"),
      String(serial).padStart(4, "0"),
    ].join(separator),
  );

const email = fc
  .tuple(
    chars("abcdefghijklmnopqrstuvwxyz0123456789", 1, 12),
    chars("abcdefghijklmnopqrstuvwxyz0123456789._+-", 0, 8),
    chars("abcdefghijklmnopqrstuvwxyz0123456789", 1, 12),
    chars("abcdefghijklmnopqrstuvwxyz", 2, 6),
  )
  .map(([head, tail, domain, tld]) => `${head}${tail.replace(/[.]+$/, "")}x@${domain}.${tld}`);

const ipv4 = fc
  .tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255))
  .map((octets) => octets.join("."));
const ipv6 = fc
  .tuple(
    fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }),
    fc.integer({ min: 0, max: 7 }),
    fc.boolean(),
  )
  .map(([groups, at, compress]) => {
    const hex = groups.map((group) => group.toString(16));
    if (!compress) return hex.join(":");
    return `${hex.slice(0, at).join(":")}::${hex.slice(at + 1).join(":")}`;
  });

const phone = fc
  .tuple(
    fc.integer({ min: 2, max: 9 }),
    digits(2),
    fc.integer({ min: 2, max: 9 }),
    digits(6),
    fc.constantFrom("us", "intl"),
  )
  .map(([a, area, b, rest, style]) =>
    style === "us"
      ? `(${a}${area}) ${b}${rest.slice(0, 2)}-${rest.slice(2)}`
      : `+1 ${a}${area} ${b}${rest.slice(0, 2)} ${rest.slice(2)}`,
  );

const base64url = (value: unknown) =>
  btoa(JSON.stringify(value)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const jwt = fc
  .tuple(fc.string({ minLength: 1, maxLength: 12 }), fc.nat(), chars(BASE64URL, 43))
  .map(
    ([subject, issuedAt, signature]) =>
      `${base64url({ alg: "HS256", typ: "JWT" })}.${base64url({ sub: subject, iat: issuedAt })}.${signature}`,
  );

const secret = fc.oneof(
  chars(ALNUM, 36).map((body) => `ghp_${body}`),
  chars(UPPER_DIGITS, 16).map((body) => `AKIA${body}`),
  chars(ALNUM, 24).map((body) => `sk_live_${body}`),
  fc
    .tuple(digits(10), digits(12), chars("abcdefghijklmnopqrstuvwxyz0123456789", 24))
    .map(([a, b, c]) => `xoxb-${a}-${b}-${c}`),
  chars(ALNUM, 20).map((body) => `glpat-${body}`),
  fc.tuple(chars(BASE64URL, 22), chars(BASE64URL, 43)).map(([a, b]) => `SG.${a}.${b}`),
  chars(BASE64URL, 35).map((body) => `AIza${body}`),
  chars(ALNUM, 36).map((body) => `npm_${body}`),
  chars(BASE64URL, 93).map((body) => `sk-ant-api03-${body}AA`),
  fc.tuple(chars(ALNUM, 20), chars(ALNUM, 20)).map(([a, b]) => `sk-proj-${a}T3BlbkFJ${b}`),
  chars("abcdefghijklmnopqrstuvwxyz0123456789", 32).map((body) => `SK${body}`),
  jwt,
);

/** Secrets that only count as such in context: the generated value and the text around it. */
const contextual = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(
        "password",
        "DB_PASSWORD",
        "apiKey",
        "client_secret",
        "auth_token",
        "x-api-key",
      ),
      fc.constantFrom("=", ": ", " = ", '="'),
      chars(ALNUM, 1),
      chars(`${ALNUM}!#$%^*+-_`, 5, 20),
    )
    .map(([key, operator, first, rest]) => {
      const value = first + rest;
      return {
        value,
        text: operator.endsWith('"') ? `${key}${operator}${value}"` : `${key}${operator}${value}`,
      };
    }),
  fc
    .tuple(chars("abcdefghijklmnopqrstuvwxyz", 3, 10), chars(`${ALNUM}!$*-_`, 6, 20))
    .map(([user, password]) => ({
      value: password,
      text: `postgres://${user}:${password}@db.example.com:5432/app`,
    })),
  fc.array(chars(`${ALNUM}+/`, 64), { minLength: 1, maxLength: 6 }).map((lines) => ({
    value: lines.join("\n"),
    text: `-----BEGIN RSA PRIVATE KEY-----\n${lines.join("\n")}\n-----END RSA PRIVATE KEY-----`,
  })),
);

const sensitive = fc.oneof(
  fc
    .oneof(card, iban, ssn, email, ipv4, ipv6, phone, secret)
    .map((value) => ({ value, text: value })),
  contextual,
);

// Filler around the value: words and delimiters, no digits (a digit glued to a number
// makes a different number).
const word = fc.constantFrom(
  "the",
  "order",
  "arrived",
  "broken",
  "Refund",
  "please",
  "id",
  "for",
  "customer",
  "note",
  "ok",
  "é",
  "日本",
);
const delimiter = fc.constantFrom(
  " ",
  "\n",
  "\t",
  "(",
  ")",
  '"',
  "'",
  ",",
  ";",
  ": ",
  "<",
  ">",
  "[",
  "]",
  " | ",
  "\r\n",
);
const filler = fc
  .array(
    fc.tuple(word, delimiter).map(([w, d]) => w + d),
    { maxLength: 8 },
  )
  .map((parts) => parts.join(""));
const placed = fc
  .tuple(filler, delimiter, sensitive, delimiter, filler)
  .map(([before, open, item, close, after]) => ({
    value: item.value,
    text: `${before}${open}${item.text}${close}${after}`,
  }));

async function streamed(text: string, cuts: number[]): Promise<string> {
  const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort(
    (left, right) => left - right,
  );
  const chunks: string[] = [];
  let last = 0;
  for (const point of [...points, text.length]) {
    chunks.push(text.slice(last, point));
    last = point;
  }
  const stream = createRedactionStream({ holdBack: 512 });
  const writer = stream.writable.getWriter();
  const writing = (async () => {
    for (const chunk of chunks) await writer.write(chunk);
    await writer.close();
  })();
  let output = "";
  for await (const piece of stream.readable) output += piece;
  await writing;
  return output;
}

describe("no generated secret or identifier survives", () => {
  it("redact", () => {
    fc.assert(
      fc.property(placed, ({ value, text }) => {
        expect(redact(text).text).not.toContain(value);
      }),
      { numRuns: 2000 },
    );
  });

  it("redactDeep and createRedactor, in values, arrays, Maps and keys", () => {
    const redactor = createRedactor();
    fc.assert(
      fc.property(placed, ({ value, text }) => {
        const input = { a: [{ b: text }], c: new Map([["k", text]]), [text]: 1 };
        const output = redactDeep(input) as { a: { b: string }[]; c: Map<string, string> };
        expect(output.a[0]!.b).not.toContain(value);
        expect(output.c.get("k")).not.toContain(value);
        expect(Object.keys(output).join("|")).not.toContain(value);
        expect(JSON.stringify(redactor({ deep: { list: [text] } }))).not.toContain(
          JSON.stringify(value).slice(1, -1),
        );
      }),
      { numRuns: 1000 },
    );
  });

  it("the stream, wherever the chunks are cut", async () => {
    await fc.assert(
      fc.asyncProperty(
        placed,
        fc.array(fc.nat(400), { maxLength: 12 }),
        async ({ value, text }, cuts) => {
          expect(await streamed(text, cuts)).not.toContain(value);
        },
      ),
      { numRuns: 500 },
    );
  });
});
