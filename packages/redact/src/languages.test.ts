import { describe, expect, it } from "vitest";
import { redact } from "./redact.js";

// Sentences written for these tests, in the forms a trial on fresh text missed; none is taken from the
// corpus generator's templates or from any public corpus.

/** The values `redact` found in `text` for one type. */
const found = (text: string, type: string) =>
  redact(text)
    .findings.filter((finding) => finding.type === type)
    .map((finding) => text.slice(finding.start, finding.end));

describe("person names by shape and context", () => {
  it.each([
    ["Adaeze Nwosu approved the refund.", ["Adaeze Nwosu"]],
    ["Die Rückfrage ging an Jörg Hinrichsen und Petra Vogt.", ["Jörg Hinrichsen", "Petra Vogt"]],
    [
      "Bonjour Hélène,\nvotre avoir est prêt.\n\nBien à vous,\nHélène Marchal",
      ["Hélène", "Hélène Marchal"],
    ],
    ["Para: Nuria Calvo Rey\nAsunto: devolución", ["Nuria Calvo Rey"]],
    ["Hej Ingrid!\nTack för beställningen.", ["Ingrid"]],
    ["Dzięki za cierpliwość.\n\nPozdrawiam,\nTomasz Wróbel", ["Tomasz Wróbel"]],
    ['{"voornaam": "Wessel", "achternaam": "Kuipers"}', ["Wessel", "Kuipers"]],
    ['{"achternaam": "van der Linden"}', ["van der Linden"]],
    ["Bedankt!\n\nMet vriendelijke groet,\nEva van den Berg", ["Eva van den Berg"]],
    ["Femke de Wit heeft de retour goedgekeurd.", ["Femke de Wit"]],
    ["小林 ゆかりが確認しました。", ["小林 ゆかり"]],
    ["差出人: 小林 直樹\n件名: 返品", ["小林 直樹"]],
    ["山口 拓也さんに確認しました。", ["山口 拓也"]],
    ["这件事请交给周杰先生处理。", ["周杰"]],
    ["박서준 님께 전달했습니다.", ["박서준"]],
    ["Ticket reassigned to Kim Ji-woo after the call.", ["Kim Ji-woo"]],
  ])("finds the names in %j", (text, names) => {
    expect(found(text, "PERSON")).toEqual(names);
  });

  it.each([
    "Google Chrome has crashed again.",
    "Deutsche Bahn hat den Zug gestrichen.",
    "The Albert Heijn in Den Haag closes at nine.",
    "Salt Lake City reported snow overnight.",
    "Quarterly Planning has moved to Friday.",
    "Microsoft Teams was slow for the Berlin office.",
  ])("keeps %j (a product, a firm, a place, a meeting)", (text) => {
    expect(found(text, "PERSON")).toEqual([]);
  });
});

describe("addresses in each country's order, postcodes checked per country", () => {
  it.each([
    "Calle de Serrano 41, 3º izda., 28001 Madrid",
    "Via Dante 12, 20121 Milano MI",
    "ul. Piotrkowska 104/12, 90-926 Łódź",
    "Keizersgracht 123-2, 1015 CJ Amsterdam",
    "Postbus 1200, 3500 BE Utrecht",
    "Bergstraße 7, 2. OG, 69120 Heidelberg",
    "Sveavägen 44 lgh 1203, 113 59 Stockholm",
    "Appartement 4, 18 rue Oberkampf, 75011 Paris",
    "Rose Cottage, Mill Road, Ely CB7 4DJ",
    "2-4-1 Shibakoen, Minato-ku, Tokyo 105-0011",
    "广东省广州市天河区体育西路191号",
    "서울특별시 마포구 월드컵북로 396",
    "77 Birchwood Crossing, Macon, GA 31201",
  ])("finds %j whole", (address) => {
    const text = `Ship it to ${address} please.`;
    expect(found(text, "ADDRESS")).toEqual([address]);
  });

  it.each([
    ["a Spanish street with no Spanish province", "Calle de Serrano 41, 99001 Madrid"],
    ["a Polish street with a five-digit postcode", "ul. Długa 5, 12345 Gdańsk"],
  ])("leaves %s", (_label, address) => {
    expect(found(`Ship it to ${address} please.`, "ADDRESS")).toEqual([]);
  });
});

describe("dates of birth: the cue decides, not the date", () => {
  it.each([
    ["geb. 03.07.1961", "03.07.1961"],
    ["née le 4 juillet 1975 à Lille", "4 juillet 1975"],
    ["nacida el 9 de agosto de 1990", "9 de agosto de 1990"],
    ["data di nascita: 21/02/1958", "21/02/1958"],
    ["geboren op 2 maart 1983", "2 maart 1983"],
    ["f. 1988-11-30", "1988-11-30"],
    ["ur. 17.09.1972", "17.09.1972"],
    ["b. 1984-03-12", "1984-03-12"],
    ["He was born in April of 1979.", "April of 1979"],
    ["1979年4月3日生まれ", "1979年4月3日"],
    ["생년월일: 1991년 6월 8일", "1991년 6월 8일"],
    ['{"geburtsdatum": "1966-05-14"}', "1966-05-14"],
  ])("finds the birth date in %j", (text, date) => {
    expect(found(text, "DATE_OF_BIRTH")).toEqual([date]);
  });

  it.each([
    "Lieferung am 03.07.2024 erfolgt.",
    "Le colis a été livré le 4 juillet 2025.",
    "Il pacco è stato consegnato il 21/02/2024.",
    "The order shipped on 12 March 2024.",
  ])("keeps the date in %j", (text) => {
    expect(found(text, "DATE_OF_BIRTH")).toEqual([]);
  });
});

describe("spelled-out emails, national phones, versions and SSNs", () => {
  it.each([
    ["reach me: ana.ruiz at correo dot es", "ana.ruiz at correo dot es"],
    ["mail j.roe at acme.io today", "j.roe at acme.io"],
    ["escribe a marta arroba ejemplo punto es", "marta arroba ejemplo punto es"],
    ["contact: pia (at) firma (dot) de", "pia (at) firma (dot) de"],
  ])("finds the email in %j", (text, email) => {
    expect(found(text, "EMAIL")).toEqual([email]);
  });

  it("keeps prose that has the word at before a domain", () => {
    expect(found("look at example.com for the docs", "EMAIL")).toEqual([]);
  });

  it.each([
    "Tel. 030 901820 44",
    "06 12 34 56 78",
    "07700 900123",
    "020 7946 0018",
    "010-1234-5678",
    "090-1234-5678",
    "512 345 678",
    "+48 512 345 678",
  ])("finds the phone number %j", (phone) => {
    expect(found(`ring ${phone} tomorrow`, "PHONE")).toHaveLength(1);
  });

  it("keeps version strings after a product and redacts a private address after a device", () => {
    const text =
      "Orchid Sync 4.2.1.9 and Teams 1.6.0.2 on Printer 192.168.1.20, build 10.0.22621.2861";
    expect(redact(text).text).toBe(
      "Orchid Sync 4.2.1.9 and Teams 1.6.0.2 on Printer [IP_ADDRESS], build 10.0.22621.2861",
    );
  });

  it("takes an SSN with no cue, but not a list of part numbers of the same shape", () => {
    expect(found("078-05-1120 was on the form", "US_SSN")).toEqual(["078-05-1120"]);
    expect(found("parts 111-22-3333, 222-33-4444 and 333-44-5555", "US_SSN")).toEqual([]);
    expect(found("SSNs on file: 111-22-3333, 222-33-4444", "US_SSN")).toEqual([
      "111-22-3333",
      "222-33-4444",
    ]);
  });
});
