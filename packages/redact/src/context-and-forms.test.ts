import { describe, expect, it } from "vitest";
import {
  ean13Valid,
  fedexExpressValid,
  fedexGroundValid,
  isbn10Valid,
  isbn13Valid,
  upcValid,
  upsTrackingValid,
} from "./checksums.js";
import { normalizedView } from "./normalized-view.js";
import { redact } from "./redact.js";

const types = (text: string) => redact(text).findings.map((finding) => finding.type);
const redacted = (text: string) => redact(text).text;

describe("context: look-alikes stay, PII goes", () => {
  it.each([
    "Agent 4.6.5.67 rolled out",
    "user-agent: acme-cli/8.20.11.160 (linux)",
    "Firmware 6.11.14.157 is required",
    '{"version": "4.2.1.9", "build": "12.0.3.44"}',
    "upgraded to v10.2.0.1 last night",
    "build=3.1.4.15 release 2.14.0.1",
  ])("a four-part version is not an IP address: %s", (text) => {
    expect(types(text)).not.toContain("IP_ADDRESS");
  });

  it.each([
    "login from 10.2.3.4 failed",
    "client_ip=192.168.0.12 status=200",
    "Primary: 10.0.0.1, Secondary: 172.16.0.1",
    "Refund 10.0.0.1 please",
    '{"ip": "203.0.113.9", "version": "1.2.3.4"}',
  ])("an address with or without a label is still found: %s", (text) => {
    expect(types(text)).toContain("IP_ADDRESS");
  });

  it("ISBNs, EANs, UPS and FedEx numbers with valid check digits are kept", () => {
    expect(isbn13Valid("9780306406157")).toBe(true);
    expect(isbn10Valid("0306406152")).toBe(true);
    expect(isbn10Valid("0306406153")).toBe(false);
    expect(ean13Valid("4006381333931")).toBe(true);
    expect(upcValid("036000291452")).toBe(true);
    expect(upsTrackingValid("1Z999AA10123456784")).toBe(true);
    expect(upsTrackingValid("1Z999AA10123456785")).toBe(false);
    expect(fedexExpressValid("986578788855")).toBe(true);
    expect(fedexGroundValid("961234567890123")).toBe(false);
    for (const text of [
      "ISBN 978-0-306-40615-7 is out of print",
      "Book: ISBN-10 0-306-40615-2, paperback",
      "EAN 4006381333931 on the box",
      "UPS tracking 1Z999AA10123456784 shows delivered",
      "FedEx tracking number 986578788855, left at the door",
    ])
      expect(redacted(text)).toBe(text);
  });

  it("an order label does not hide a card or a phone number", () => {
    expect(types("order 4111 1111 1111 1111")).toContain("CREDIT_CARD");
    expect(types("order 4111111111111111")).toContain("CREDIT_CARD");
    expect(types("order (415) 555-0132")).toContain("PHONE");
  });

  it("an SSN without separators is found only after an SSN label", () => {
    expect(types("SSN: 123456789")).toContain("US_SSN");
    expect(types("social security number is 123456789")).toContain("US_SSN");
    expect(types("order 123456789 shipped")).not.toContain("US_SSN");
  });
});

describe("Unicode forms: detect on a normalised view, redact the original span", () => {
  it.each([
    ["jane.doe (at) acme (dot) io", "EMAIL"],
    ["jane.doe [at] acme [dot] io", "EMAIL"],
    ["jane.doe＠acme.io", "EMAIL"],
    ["jane.doe%40acme.io", "EMAIL"],
    ['"john smith"@example.com', "EMAIL"],
    ["j\u200bane.d\u200coe@ac\u00adme.io", "EMAIL"],
    ["４１１１ １１１１ １１１１ １１１１", "CREDIT_CARD"],
    ["4111\u200b1111\u200b1111\u200b1111", "CREDIT_CARD"],
    ["call +٩٧١ ٥٠ ١٢٣ ٤٥٦٧ now", "PHONE"],
    ["携帯 ０９０-１２３４-５６７８", "PHONE"],
    ["call four one five five five five zero one three two", "PHONE"],
  ])("%s is found as %s and redacted whole", (text, type) => {
    const { text: output, findings } = redact(text);
    expect(findings.map((finding) => finding.type)).toContain(type);
    // Nothing of the value's digits or letters is left beside the placeholder.
    expect(output).toMatch(new RegExp(`\\[${type}\\]`));
    expect(output).not.toMatch(/[0-9０-９٠-٩]{3}|acme|jane/);
  });

  it("maps every character of the view back to the original", () => {
    const text = "a\u200bb ＠ c (at) d%40e ٣";
    const view = normalizedView(text);
    expect(view.identity).toBe(false);
    expect(view.text).toBe("ab @ c@d@e 3");
    expect(view.originalSpan(0, 2)).toEqual([0, 3]);
    expect(view.originalSpan(view.text.length - 1, view.text.length)).toEqual([
      text.length - 1,
      text.length,
    ]);
  });

  it("plain ASCII text is its own view", () => {
    expect(normalizedView("plain text, call at noon").identity).toBe(true);
  });
});

describe("names, addresses and dates of birth", () => {
  it.each([
    ["Hi Maya,\nthanks for writing.", "Maya"],
    ["Dear Ms Lindqvist, your refund is on its way.", "Lindqvist"],
    ["Kind regards,\nTobias Brandt\nAcme Support", "Tobias Brandt"],
    ['From: "Maya Lindqvist" <maya@example.com>', "Maya Lindqvist"],
    ['{"name": "佐藤 花子", "plan": "pro"}', "佐藤 花子"],
    ["Клиент: Анна Смирнова, заказ A1001", "Анна Смирнова"],
    ["I spoke with Jennifer Lopez yesterday.", "Jennifer Lopez"],
  ])("%s: the name is redacted", (text, name) => {
    const output = redacted(text);
    expect(output).not.toContain(name);
    expect(output).toContain("[PERSON]");
  });

  it.each([
    "Hi team, the Order Status page moved to New York.",
    "Dear Customer, your Premium Plan renews soon.",
    "The warehouse checks each parcel. Customers may return items.",
    "Release Notes for Black Friday",
  ])("capitalised phrases that are not names stay: %s", (text) => {
    expect(types(text)).not.toContain("PERSON");
  });

  it.each([
    ["Ship to: 1600 Harbor View Drive Apt 4B, Portland, OR 97201", "Harbor View"],
    ["Flat 3, 12 Priory Lane\nYork\nYO1 7HH", "Priory Lane"],
    ["Lieferadresse: Lindenstraße 12a, 10115 Berlin", "Lindenstraße"],
    ["Adresse : 12 bis rue des Lilas, 69003 Lyon", "rue des Lilas"],
    ["Leveransadress: Storgatan 5, 111 22 Stockholm", "Storgatan"],
    ["住所: 〒160-0023 東京都新宿区西新宿1丁目2番3号", "西新宿"],
  ])("%s: the address is redacted", (text, part) => {
    expect(redacted(text)).not.toContain(part);
    expect(types(text)).toContain("ADDRESS");
  });

  it("a date near a birth word is a date of birth; other dates stay", () => {
    expect(types("DOB: 1984-03-12")).toContain("DATE_OF_BIRTH");
    expect(types("She was born on 12 March 1984.")).toContain("DATE_OF_BIRTH");
    expect(types('{"date_of_birth": "1984-03-12"}')).toContain("DATE_OF_BIRTH");
    expect(redacted("Birthday 3/4/1990, member since 2020-01-05.")).toBe(
      "Birthday [DATE_OF_BIRTH], member since 2020-01-05.",
    );
    expect(types("Shipped on 2024-03-12, delivered 14 March 2024.")).toEqual([]);
  });
});
