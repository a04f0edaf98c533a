// Generates the learned detector's training rows: templates × slots × languages × carriers,
// from a fixed seed, so the file is the same on every machine.
//
//   node training/generate.mjs [--seed 20261201] [--out training/rows.jsonl]
//
// Every row is written for this project (see languages.mjs); none comes from a public
// benchmark, and the repo's own evaluation corpus (packages/evals) is not read. Injection rows
// and their benign twins share carriers, slot values and vocabulary (the same addresses, order
// ids and IBANs appear on both sides), so the model cannot learn "an email address means attack".
import { writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  claimedUserMessages,
  everyday,
  files,
  hijacks,
  prose,
  securityWriting,
  workRecords,
} from "./extra-english.mjs";
import { fillers as baseFillers, languages, names, phrases, products } from "./languages.mjs";
import { generator } from "./seeded-random.mjs";

languages.en.hijack.push(...hijacks);
languages.en.benign.push(...everyday, ...workRecords, ...workRecords);
languages.en.frames.push(...claimedUserMessages);
languages.en.discuss.push(...securityWriting);
const fillers = [...baseFillers, ...prose];

const here = dirname(fileURLToPath(import.meta.url));
const argument = (flag, fallback) => {
  const index = process.argv.indexOf(flag);
  return index >= 0 ? process.argv[index + 1] : fallback;
};
const seed = Number(argument("--seed", "20261201"));
const out = resolve(argument("--out", resolve(here, "rows.jsonl")));

const random = generator(seed);
const pick = (list) => list[Math.floor(random() * list.length)];
const chance = (p) => random() < p;

const emails = [
  "billing@acme-shop.com",
  "support@northwind.io",
  "j.smith@gmail.com",
  "refunds@shop-help.net",
  "admin@secure-verify.co",
  "ops@contoso.example",
  "maria.g@outlook.es",
  "claims@payfast.biz",
  "it-desk@globex.de",
  "team@startup.dev",
  "verify@account-check.info",
  "hr@initech.fr",
  "backup@mailbox.pl",
  "destek@firma.com.tr",
  "info@shop.jp",
  "service@store.cn",
  "help@souq.ae",
];
const urls = [
  "https://acme-shop.com/orders",
  "https://track.parcel-go.com/status",
  "http://secure-login.example/verify",
  "https://docs.northwind.io/help",
  "https://bit.ly/3xR9kQ",
  "https://pay.fast-refund.net/claim",
  "https://intranet.globex.de/wiki",
  "http://collect.data-sync.io/c",
  "https://www.example.org/page",
  "https://forms.office.example/survey",
  "https://cdn.images.example/p.png",
];
const ibans = [
  "DE89 3704 0044 0532 0130 00",
  "GB29NWBK60161331926819",
  "FR14 2004 1010 0505 0001 3M02 606",
  "PL61 1090 1014 0000 0712 1981 2874",
  "TR33 0006 1005 1978 6457 8413 26",
  "ES91 2100 0418 4502 0005 1332",
];
const amounts = [
  "$49.99",
  "€1,250.00",
  "£300",
  "$12,000",
  "900 EUR",
  "¥50,000",
  "$7.50",
  "2.500 €",
  "USD 4,800",
];
const dates = ["12 March", "Friday", "2025-06-14", "next Monday", "1 April 2026", "the 3rd of May"];
const phones = [
  "+1 415 555 0132",
  "+44 20 7946 0958",
  "+49 30 123456",
  "0800 123 456",
  "+90 212 555 12 34",
];
const orderId = () =>
  `${pick(["A", "B", "ORD-", "#", "INV-", "T-", ""])}${1000 + Math.floor(random() * 900000)}`;

function fill(template, table) {
  return template
    .replace(/\{(\w+)\}/g, (whole, slot) => {
      switch (slot) {
        case "ai":
          return pick(table.ai);
        case "override":
          return pick(table.override);
        case "fresh":
          return pick(table.fresh);
        case "secret":
          return chance(0.7) ? pick(table.secret) : "";
        case "email":
          return pick(emails);
        case "url":
          return pick(urls);
        case "order":
          return orderId();
        case "iban":
          return pick(ibans);
        case "amount":
          return pick(amounts);
        case "data":
          return pick(table.data);
        case "name":
          return pick(names);
        case "date":
          return pick(dates);
        case "phone":
          return pick(phones);
        case "product":
          return pick(products);
        case "phrase":
          return pick(phrases);
        case "langname":
          return pick(table.langname);
        case "file":
          return pick(files);
        // A quoted attack inside security writing: the benign twin of an injection.
        case "payload":
          return injection(chance(0.7) ? languages.en : table).text.replace(/\n/g, " ");
        default:
          return whole;
      }
    })
    .replace(/ {2,}/g, " ")
    .replace(/ ([.?!,])/g, "$1")
    .trim();
}

const capitalise = (text) => text.charAt(0).toUpperCase() + text.slice(1);

/** One injection payload in a language: a frame around an action, or a task hijack. */
function injection(table) {
  if (table.hijack.length > 0 && chance(0.3))
    return { text: fill(pick(table.hijack), table), kind: "hijack" };
  const frame = pick(table.frames);
  const action = fill(pick(table.actions), table);
  const filled = fill(frame.replace("{action}", action), table);
  return { text: frame.startsWith("{action}") ? capitalise(filled) : filled, kind: "override" };
}

/** One benign sentence in a language, from the same kind of documents. */
function benign(table) {
  const roll = random();
  if (roll < 0.5) return { text: fill(pick(table.benign), table), kind: "request" };
  if (roll < 0.62) return { text: fill(pick(table.notices), table), kind: "notice" };
  if (roll < 0.88) return { text: fill(pick(table.discuss), table), kind: "discussion" };
  return { text: pick(fillers), kind: "filler" };
}

const escapeJson = (text) => JSON.stringify(text).slice(1, -1);

/** Carriers: how a sentence reaches the agent. Both classes go through the same ones. */
const carriers = {
  plain: (text) => text,
  email: (text) =>
    `From: ${pick(names)} <${pick(emails)}>\nSubject: ${pick(["Re: your order", "Invoice", "Quick question", "Meeting notes", "Update", "Account"])}\n\n${pick(["Hi,", "Hello team,", "Dear customer,", "Hi there,"])}\n${text}\n\n${pick(["Best regards,", "Thanks,", "Cheers,", "Kind regards,"])}\n${pick(names)}`,
  ticket: (text) =>
    `Ticket ${orderId()} · priority ${pick(["low", "normal", "high"])}\nCustomer: ${pick(names)}\nMessage: ${text}`,
  json: (text) =>
    `{"id": "${orderId()}", "status": "${pick(["shipped", "open", "pending", "delivered"])}", "${pick(["note", "comment", "description", "customer_note", "memo", "instructions"])}": "${escapeJson(text)}"}`,
  yaml: (text) =>
    `id: ${orderId()}\n${pick(["note", "comment", "description", "remarks"])}: "${text.replace(/"/g, "'")}"\nupdated: ${pick(dates)}`,
  codeComment: (text) =>
    pick([
      `function total(items) {\n  // ${text}\n  return items.reduce((sum, item) => sum + item.price, 0);\n}`,
      `def load(path):\n    # ${text}\n    with open(path) as handle:\n        return handle.read()`,
      `/* ${text} */\nSELECT id, total FROM orders WHERE status = 'open';`,
      `# ${text}\nexport PATH="$HOME/bin:$PATH"`,
    ]),
  htmlComment: (text) => `<p>${pick(fillers)}</p>\n<!-- ${text} -->\n<p>${pick(fillers)}</p>`,
  hiddenHtml: (text) =>
    `<div class="product"><h2>${pick(products)}</h2><p>${pick(fillers)}</p><span style="${pick(["display:none", "font-size:0", "color:#fff"])}">${text}</span></div>`,
  markdownTable: (text) =>
    `| item | note |\n|---|---|\n| ${pick(products)} | ${text.replace(/\|/g, "/").replace(/\n/g, " ")} |`,
  review: (text) =>
    `★★★★☆ ${pick(["Great product.", "Works as described.", "Fast delivery."])} ${text}`,
  document: (text) => `${pick(fillers)} ${text} ${pick(fillers)}`,
  csv: (text) =>
    `order_id,customer,comment\n${orderId()},${pick(names)},"${text.replace(/"/g, "'")}"`,
  logLine: (text) =>
    `2026-11-${10 + Math.floor(random() * 19)}T10:${10 + Math.floor(random() * 49)}:00Z INFO request handled: ${text}`,
};
const carrierNames = Object.keys(carriers);

// Languages by weight: English carries the most phrasings.
const weights = {
  en: 8,
  fr: 2,
  de: 2,
  es: 2,
  pl: 1.5,
  tr: 1.5,
  ja: 1.5,
  zh: 1.5,
  ar: 1.5,
  it: 1,
  pt: 1,
  ru: 1,
  nl: 1,
  ko: 1,
};
const languageList = Object.entries(weights);
const totalWeight = languageList.reduce((sum, [, weight]) => sum + weight, 0);
function pickLanguage() {
  let roll = random() * totalWeight;
  for (const [language, weight] of languageList) {
    roll -= weight;
    if (roll < 0) return language;
  }
  return "en";
}

const rows = [];
const seen = new Set();
const perClass = Number(argument("--per-class", "7000"));
for (const label of ["injection", "benign"]) {
  let made = 0;
  let attempts = 0;
  while (made < perClass && attempts < perClass * 20) {
    attempts++;
    const language = pickLanguage();
    const table = languages[language];
    const core = label === "injection" ? injection(table) : benign(table);
    let text = core.text;
    // Context around the sentence in the same row, sometimes: the detector scores windows of a
    // few sentences, so rows look like windows.
    if (chance(0.25))
      text = `${label === "benign" && chance(0.5) ? benign(table).text : pick(fillers)} ${text}`;
    if (label === "benign" && chance(0.3)) text = `${text} ${benign(table).text}`;
    const carrier = pick(carrierNames);
    // Private-use marks around the sentence survive every carrier (JSON keeps them as they are)
    // and give the span of the sentence in the row: the trainer labels windows by it.
    text = carriers[carrier](`\ue000${text}\ue001`);
    const start = text.indexOf("\ue000");
    const end = text.indexOf("\ue001") - 1;
    text = text.replace("\ue000", "").replace("\ue001", "");
    if (seen.has(text)) continue;
    seen.add(text);
    rows.push({ text, label, lang: language, kind: core.kind, carrier, span: [start, end] });
    made++;
  }
}

// Shuffle (Fisher–Yates with the seeded generator) and assign a validation split by position.
for (let index = rows.length - 1; index > 0; index--) {
  const other = Math.floor(random() * (index + 1));
  [rows[index], rows[other]] = [rows[other], rows[index]];
}
const lines = rows.map((row, index) =>
  JSON.stringify({ id: `syn-${index}`, ...row, split: index % 10 === 0 ? "valid" : "train" }),
);
writeFileSync(out, `${lines.join("\n")}\n`);
const count = (predicate) => rows.filter(predicate).length;
console.log(
  `[injection training] wrote ${rows.length} rows to ${out} (seed ${seed}): ${count((row) => row.label === "injection")} injection, ${count((row) => row.label === "benign")} benign, ${new Set(rows.map((row) => row.lang)).size} languages, ${carrierNames.length} carriers`,
);
