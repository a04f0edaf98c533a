// Writes corpus/pii-corpus.jsonl: a labelled PII corpus written for this package, from a fixed
// seed, so the tests and `bench/accuracy.mjs` run on a clone with nothing beside it.
//
//   node corpus/generate.mjs            # rewrites corpus/pii-corpus.jsonl (same bytes every time)
//   node corpus/generate.mjs --check    # exits 1 if the file on disk differs from a fresh run
//
// Every row: { id, text, entities: [{ type, start, end, value }], lookalikes: [{ kind,
// imitates, start, end, value }], subset, meta: { template } }. `entities` must be redacted;
// `lookalikes` must be kept (versions, ISBNs, tracking numbers, product codes, dates that are
// not birthdays, capitalised words that are not names...). Templates alternate between the
// `generated_dev` subset (tune on it) and `generated_test` (measure only): a template's index
// decides, so a rule written for a dev sentence is measured on sentences it never saw. The
// names, streets and words here are written for the project (no list is shared with the
// detectors' lexicon in src/lexicon/).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { seededRandom } from "./seeded-random.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const OUT = join(here, "pii-corpus.jsonl");
const SEED = 20261201;
const ROWS_PER_TEMPLATE = 12;

// ---- seeded random (mulberry32, seeded-random.mjs) ----
const { random, int, pick, digits, pad } = seededRandom(SEED);

// ---- check digits (written here independently of src/checksums.ts, so each checks the other) ----
function luhnComplete(body) {
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
function ibanFor(country, bban) {
  const numeric = `${bban}${country}00`.replace(/[A-Z]/g, (letter) =>
    String(letter.charCodeAt(0) - 55),
  );
  let remainder = 0;
  for (const char of numeric) remainder = (remainder * 10 + Number(char)) % 97;
  return `${country}${pad(98 - remainder, 2)}${bban}`;
}
function isbn13() {
  const body = `${pick(["978", "979"])}${digits(9)}`;
  let sum = 0;
  for (let index = 0; index < 12; index++) sum += Number(body[index]) * (index % 2 === 0 ? 1 : 3);
  return body + String((10 - (sum % 10)) % 10);
}
function isbn10() {
  const body = digits(9);
  let sum = 0;
  for (let index = 0; index < 9; index++) sum += Number(body[index]) * (10 - index);
  const check = (11 - (sum % 11)) % 11;
  return body + (check === 10 ? "X" : String(check));
}
function ean13() {
  const body = `${int(30, 99)}${digits(10)}`;
  let sum = 0;
  for (let index = 0; index < 12; index++) sum += Number(body[index]) * (index % 2 === 0 ? 1 : 3);
  return body + String((10 - (sum % 10)) % 10);
}
function upcA() {
  const body = `${int(0, 9)}${digits(10)}`;
  let sum = 0;
  for (let index = 0; index < 11; index++) sum += Number(body[index]) * (index % 2 === 0 ? 3 : 1);
  return body + String((10 - (sum % 10)) % 10);
}
function upsTracking() {
  const alnum = "ABCDEFGHJKLMNPRSTVWXY0123456789";
  const body =
    Array.from({ length: 6 }, () => pick([...alnum])).join("") + pad(int(1, 99), 2) + digits(7);
  let sum = 0;
  for (let index = 0; index < body.length; index++) {
    const char = body[index];
    const value = /\d/.test(char) ? Number(char) : (char.charCodeAt(0) - 3) % 10;
    sum += index % 2 === 1 ? value * 2 : value;
  }
  return `1Z${body}${(10 - (sum % 10)) % 10}`;
}
function fedexExpress() {
  const body = digits(11);
  const weights = [1, 3, 7];
  let sum = 0;
  for (let index = 0; index < 11; index++) sum += Number(body[10 - index]) * weights[index % 3];
  return body + String((sum % 11) % 10);
}
function fedexGround() {
  const body = `96${digits(12)}`;
  let odd = 0;
  let even = 0;
  for (let index = 0; index < body.length; index++) {
    const digit = Number(body[body.length - 1 - index]);
    if (index % 2 === 0) even += digit;
    else odd += digit;
  }
  return body + String((10 - ((even * 3 + odd) % 10)) % 10);
}

// ---- values ----
const GIVEN = {
  en: [
    "Maya",
    "Oliver",
    "Harriet",
    "Declan",
    "Imogen",
    "Tobias",
    "Rosalind",
    "Callum",
    "Niamh",
    "Everett",
    "Delphine",
    "Rowan",
  ],
  sv: ["Astrid", "Linnea", "Björn", "Sigrid", "Elof", "Maja", "Viggo", "Saga"],
  de: ["Jürgen", "Friederike", "Anneliese", "Matthias", "Wiebke", "Lorenz", "Henrike"],
  fr: ["Élodie", "Aurélien", "Solène", "Thibault", "Maëlle", "Grégoire", "Anaïs"],
  es: ["Alejandro", "Itziar", "Mercedes", "Joaquín", "Ximena", "Rodrigo", "Nerea"],
  it: ["Giulia", "Lorenzo", "Benedetta", "Federico", "Ottavia"],
  pl: ["Zofia", "Wojciech", "Małgorzata", "Przemysław"],
  tr: ["Elif", "Mehmet", "Zeynep", "Oğuz", "Ayşe"],
  ng: ["Chiamaka", "Oluwaseun", "Ngozi", "Adebayo", "Folake"],
  in: ["Priya", "Arjun", "Lakshmi", "Rohan", "Ananya", "Vikram"],
  vi: ["Thanh", "Minh", "Lan", "Quang"],
  ar: ["Yousef", "Layla", "Omar", "Fatima", "Karim"],
};
const SURNAME = {
  en: [
    "Whitfield",
    "Ashdown",
    "Pemberton",
    "Halloway",
    "Kettering",
    "Marlow",
    "Thistlewood",
    "Fairbairn",
    "Okafor",
    "Brennan",
    "Caldwell",
  ],
  sv: ["Lindqvist", "Sjöberg", "Håkansson", "Engström", "Bergkvist", "Nyström"],
  de: ["Grünewald", "Oberhauser", "Feldmann", "Kästner", "Brandt", "Vogelsang"],
  fr: ["Delacroix", "Beaumont", "Lefèvre", "Marchand", "Rousseau", "Chevalier"],
  es: ["Etxeberria", "Villanueva", "Castañeda", "Olmedo", "Zubiri"],
  it: ["Bianchi", "Santoro", "Guerrieri", "Lombardi"],
  pl: ["Wiśniewska", "Kowalczyk", "Zieliński", "Krawczyk"],
  tr: ["Yılmaz", "Demir", "Çelik", "Aydın"],
  ng: ["Adeyemi", "Okonkwo", "Balogun", "Eze"],
  in: ["Raghunathan", "Iyer", "Banerjee", "Deshpande", "Chaudhary"],
  vi: ["Nguyen", "Tran", "Pham", "Hoang"],
  ar: ["Haddad", "Al-Masri", "Khoury", "Nasser"],
};
const SCRIPT_NAMES = [
  ["ja", "佐藤 花子"],
  ["ja", "高橋 健太"],
  ["ja", "山本 美咲"],
  ["ja", "中村 翔"],
  ["zh", "王秀英"],
  ["zh", "李建国"],
  ["zh", "陈静"],
  ["zh", "刘洋"],
  ["ko", "김민준"],
  ["ko", "이서연"],
  ["ko", "박지훈"],
  ["ru", "Анна Смирнова"],
  ["ru", "Дмитрий Волков"],
  ["ru", "Екатерина Соколова"],
  ["uk", "Олена Шевченко"],
  ["ar", "محمد العتيبي"],
  ["ar", "فاطمة الزهراء"],
  ["el", "Νίκος Παπαδόπουλος"],
  ["el", "Ελένη Γεωργίου"],
  ["he", "יעל כהן"],
  ["hi", "राहुल शर्मा"],
];
function latinName(parts = 2) {
  const culture = pick(Object.keys(GIVEN));
  const given = pick(GIVEN[culture]);
  const surname = pick(SURNAME[culture]);
  if (parts === 1) return given;
  if (parts === 3) return `${given} ${String.fromCharCode(int(65, 90))}. ${surname}`;
  return `${given} ${surname}`;
}
function anyName() {
  return random() < 0.3 ? pick(SCRIPT_NAMES)[1] : latinName(random() < 0.15 ? 3 : 2);
}
const DOMAINS = [
  "acme.io",
  "example.com",
  "mail.example.org",
  "kunde.de",
  "posteo.net",
  "corp.example.co.uk",
];
function emailLocal() {
  const name = latinName(2)
    .normalize("NFD")
    .replace(/[^\x20-\x7e]/g, "")
    .toLowerCase()
    .split(" ");
  return pick([
    `${name[0]}.${name[1]}`,
    `${name[0]}${int(1, 99)}`,
    `${name[0][0]}${name[1]}`,
    `${name[0]}_${name[1]}`,
  ]);
}
const email = () => `${emailLocal()}@${pick(DOMAINS)}`;
const ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\ufeff"];
const FULL_WIDTH = (text) =>
  text.replace(/[0-9@.+-]/g, (char) => String.fromCharCode(char.charCodeAt(0) + 0xfee0));
const scriptDigits = (text, zero) =>
  text.replace(/[0-9]/g, (char) => String.fromCodePoint(zero + Number(char)));
const splitWith = (text, separator) =>
  [...text]
    .map((char, index) => (index > 0 && index % int(2, 5) === 0 ? separator + char : char))
    .join("");
function obfuscatedEmail() {
  const local = emailLocal();
  const [host, ...rest] = pick(DOMAINS).split(".");
  return pick([
    () => `${local} (at) ${host} (dot) ${rest.join(" (dot) ")}`,
    () => `${local} [at] ${host} [dot] ${rest.join(" [dot] ")}`,
    () => `${local}＠${host}.${rest.join(".")}`,
    () => `${local}%40${host}.${rest.join(".")}`,
    () =>
      `"${latinName(2)
        .toLowerCase()
        .normalize("NFD")
        .replace(/[^\x20-\x7e]/g, "")}"@${host}.${rest.join(".")}`,
    () => splitWith(`${local}@${host}.${rest.join(".")}`, pick(ZERO_WIDTH)),
  ])();
}
const cardNumber = () => {
  const kind = pick(["visa", "mc", "amex"]);
  if (kind === "amex") return luhnComplete(`${pick(["34", "37"])}${digits(12)}`);
  if (kind === "mc") return luhnComplete(`5${int(1, 5)}${digits(13)}`);
  return luhnComplete(`4${digits(14)}`);
};
const groupCard = (card, separator) =>
  card.length === 15
    ? `${card.slice(0, 4)}${separator}${card.slice(4, 10)}${separator}${card.slice(10)}`
    : card.replace(/(\d{4})(?=\d)/g, `$1${separator}`);
function cardText() {
  const card = cardNumber();
  return pick([
    () => groupCard(card, " "),
    () => groupCard(card, "-"),
    () => card,
    () => FULL_WIDTH(groupCard(card, " ")),
    () => splitWith(card, pick(ZERO_WIDTH)),
  ])();
}
function ibanText() {
  const country = pick(["DE", "GB", "FR", "SE", "NL", "ES"]);
  const bban = {
    DE: () => digits(18),
    GB: () => `${pick(["NWBK", "BARC", "HBUK", "LOYD"])}${digits(14)}`,
    FR: () => `${digits(10)}${pick(["ABCDE", "0A1B2", "X9Y8Z"])}${digits(8)}`,
    SE: () => digits(20),
    NL: () => `${pick(["ABNA", "INGB", "RABO"])}${digits(10)}`,
    ES: () => digits(20),
  }[country]();
  const iban = ibanFor(country, bban);
  return random() < 0.5 ? iban.replace(/(.{4})(?=.)/g, "$1 ") : iban;
}
function ssnText() {
  let area = int(1, 899);
  if (area === 666) area = 667;
  const parts = [pad(area, 3), pad(int(1, 99), 2), pad(int(1, 9999), 4)];
  return pick([() => parts.join("-"), () => parts.join(" "), () => parts.join("")])();
}
const ipv4 = () =>
  pick([
    `10.${int(0, 255)}.${int(0, 255)}.${int(1, 254)}`,
    `192.168.${int(0, 255)}.${int(1, 254)}`,
    `${int(11, 223)}.${int(0, 255)}.${int(0, 255)}.${int(1, 254)}`,
  ]);
const ipv6 = () =>
  pick([
    `2001:db8:${int(1, 0xffff).toString(16)}::${int(1, 0xfff).toString(16)}`,
    `fe80::${int(1, 0xffff).toString(16)}:${int(1, 0xffff).toString(16)}%eth0`,
  ]);
const mac = () =>
  Array.from({ length: 6 }, () => pad(int(0, 255).toString(16), 2)).join(pick([":", "-"]));
const WORD_DIGITS = [
  "zero",
  "one",
  "two",
  "three",
  "four",
  "five",
  "six",
  "seven",
  "eight",
  "nine",
];
function phoneText() {
  return pick([
    () => `+1 ${int(201, 989)} ${int(200, 999)} ${pad(int(0, 9999), 4)}`,
    () => `(${int(201, 989)}) ${int(200, 999)}-${pad(int(0, 9999), 4)}`,
    () => `+44 7${int(400, 999)} ${pad(int(0, 999999), 6)}`,
    () => `+49 30 ${int(1000, 9999)} ${int(100, 999)}`,
    () =>
      `+33 6 ${pad(int(0, 99), 2)} ${pad(int(0, 99), 2)} ${pad(int(0, 99), 2)} ${pad(int(0, 99), 2)}`,
    () => `+46 70 ${int(100, 999)} ${pad(int(0, 99), 2)} ${pad(int(0, 99), 2)}`,
    () => FULL_WIDTH(`090-${int(1000, 9999)}-${int(1000, 9999)}`),
    () => scriptDigits(`+971 50 ${int(100, 999)} ${int(1000, 9999)}`, 0x660),
    () => scriptDigits(`0${int(912, 939)} ${int(100, 999)} ${int(1000, 9999)}`, 0x6f0),
    () => `${int(201, 989)}.${int(200, 999)}.${pad(int(0, 9999), 4)}`,
    () =>
      [..."415555"]
        .concat([...pad(int(0, 9999), 4)])
        .map((digit) => WORD_DIGITS[Number(digit)])
        .join(" "),
  ])();
}
const SECRETS = [
  () =>
    `ghp_${Array.from({ length: 36 }, () => pick([..."abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ0123456789"])).join("")}`,
  () =>
    `sk_live_${Array.from({ length: 24 }, () => pick([..."abcdefghijkmnopqrstuvwxyz0123456789"])).join("")}`,
  () =>
    `AKIA${Array.from({ length: 16 }, () => pick([..."ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"])).join("")}`,
  () =>
    `xoxb-${digits(11)}-${digits(12)}-${Array.from({ length: 24 }, () => pick([..."abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ0123456789"])).join("")}`,
  () =>
    `sk-ant-api03-${Array.from({ length: 40 }, () => pick([..."abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ0123456789_-"])).join("")}AA`,
];
const secret = () => pick(SECRETS)();

const US_STREETS = [
  "Maple Avenue",
  "Cedar Lane",
  "Harbor View Drive",
  "Old Mill Road",
  "Sycamore Court",
  "Lakeshore Boulevard",
];
const US_CITIES = [
  ["Portland", "OR"],
  ["Madison", "WI"],
  ["Tucson", "AZ"],
  ["Savannah", "GA"],
  ["Boise", "ID"],
];
const UK_STREETS = [
  "Albion Terrace",
  "Wellington Road",
  "Kingsway Close",
  "Priory Lane",
  "Marsh Street",
];
const UK_TOWNS = ["Leeds", "Bristol", "Norwich", "Cardiff", "York"];
const DE_STREETS = [
  "Lindenstraße",
  "Am Mühlbach",
  "Hauptstr.",
  "Rosenweg",
  "Kastanienallee",
  "Bahnhofstraße",
];
const DE_CITIES = ["Berlin", "Köln", "Leipzig", "Freiburg im Breisgau", "Münster"];
const FR_STREETS = [
  "rue des Lilas",
  "avenue Victor Hugo",
  "boulevard Voltaire",
  "impasse des Tilleuls",
  "place du Marché",
];
const FR_CITIES = ["Lyon", "Nantes", "Toulouse", "Rennes", "Lille"];
const SE_STREETS = ["Storgatan", "Drottninggatan", "Björkvägen", "Kungsgatan", "Sjövägen"];
const SE_CITIES = ["Uppsala", "Malmö", "Göteborg", "Umeå", "Stockholm"];
const JP_ADDRESSES = [
  () =>
    `〒${int(100, 999)}-${pad(int(0, 9999), 4)} 東京都新宿区西新宿${int(1, 8)}丁目${int(1, 30)}番${int(1, 20)}号`,
  () =>
    `〒${int(100, 999)}-${pad(int(0, 9999), 4)} 大阪府大阪市北区梅田${int(1, 3)}-${int(1, 20)}-${int(1, 30)}`,
  () => `京都府京都市左京区下鴨${pick(["本町", "宮河町", "松ノ木町"])}${int(1, 60)}番地`,
  () => `北海道札幌市中央区北${int(1, 20)}条西${int(1, 20)}丁目${int(1, 30)}-${int(1, 9)}`,
];
function address(country = pick(["US", "UK", "DE", "FR", "SE", "JP"])) {
  switch (country) {
    case "US": {
      const [city, state] = pick(US_CITIES);
      return pick([
        () =>
          `${int(12, 9800)} ${pick(US_STREETS)}, ${city}, ${state} ${pad(int(10000, 99999), 5)}`,
        () =>
          `${int(12, 9800)} ${pick(US_STREETS)} Apt ${int(1, 40)}${pick(["A", "B", ""])}, ${city}, ${state} ${pad(int(10000, 99999), 5)}`,
        () =>
          `${int(12, 9800)} ${pick(US_STREETS)}\n${city}, ${state} ${pad(int(10000, 99999), 5)}`,
      ])();
    }
    case "UK":
      return pick([
        () =>
          `${int(1, 220)} ${pick(UK_STREETS)}, ${pick(UK_TOWNS)} ${pick(["LS", "BS", "NR", "CF", "YO"])}${int(1, 20)} ${int(1, 9)}${pick(["AB", "DX", "QT", "HN"])}`,
        () =>
          `Flat ${int(1, 12)}, ${int(1, 220)} ${pick(UK_STREETS)}\n${pick(UK_TOWNS)}\n${pick(["SW", "EC", "N", "SE"])}${int(1, 19)}${pick(["A", ""])} ${int(1, 9)}${pick(["BT", "LP", "ZW"])}`,
      ])();
    case "DE":
      return pick([
        () =>
          `${pick(DE_STREETS)} ${int(1, 140)}${pick(["", "a", "b"])}, ${pad(int(1067, 99998), 5)} ${pick(DE_CITIES)}`,
        () => `${pick(DE_STREETS)} ${int(1, 140)}\n${pad(int(1067, 99998), 5)} ${pick(DE_CITIES)}`,
      ])();
    case "FR":
      return pick([
        () =>
          `${int(1, 180)}${pick(["", " bis", " ter"])} ${pick(FR_STREETS)}, ${pad(int(1000, 95999), 5)} ${pick(FR_CITIES)}`,
        () => `${int(1, 180)} ${pick(FR_STREETS)}\n${pad(int(1000, 95999), 5)} ${pick(FR_CITIES)}`,
      ])();
    case "SE":
      return pick([
        () =>
          `${pick(SE_STREETS)} ${int(1, 90)}, ${int(100, 984)} ${pad(int(0, 99), 2)} ${pick(SE_CITIES)}`,
        () =>
          `${pick(SE_STREETS)} ${int(1, 90)}${pick(["A", "B", ""])}\n${int(100, 984)} ${pad(int(0, 99), 2)} ${pick(SE_CITIES)}`,
      ])();
    default:
      return pick(JP_ADDRESSES)();
  }
}
const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];
function dateText(year = int(1940, 2006)) {
  const month = int(1, 12);
  const day = int(1, 28);
  return pick([
    () => `${year}-${pad(month, 2)}-${pad(day, 2)}`,
    () => `${pad(day, 2)}/${pad(month, 2)}/${year}`,
    () => `${month}/${day}/${year}`,
    () => `${day} ${MONTHS[month - 1]} ${year}`,
    () => `${MONTHS[month - 1]} ${day}, ${year}`,
    () => `${pad(day, 2)}.${pad(month, 2)}.${year}`,
  ])();
}

// ---- look-alike values ----
const PRODUCTS = ["Agent", "Firmware", "Orchid Sync", "Relay", "Kernel", "Chrome", "Scanner"];
const v4 = () => `${int(1, 12)}.${int(0, 20)}.${int(0, 20)}.${int(10, 240)}`;
const sku = () =>
  pick([
    `${pick(["AB", "KX", "TR", "QM"])}-${int(1000, 9999)}-${int(1000, 9999)}`,
    `SKU-${digits(8)}`,
    `${int(1000, 9999)}-${int(1000, 9999)}-${int(1000, 9999)}`,
  ]);
const orderId = () => pick([`A${int(1000, 9999)}`, `ORD-${digits(9)}`, `#${digits(7)}`]);
const invoice = () => `INV-${int(2019, 2026)}-${pad(int(1, 999999), 6)}`;
const timestamp = () =>
  `${int(2019, 2026)}-${pad(int(1, 12), 2)}-${pad(int(1, 28), 2)}T${pad(int(0, 23), 2)}:${pad(int(0, 59), 2)}:${pad(int(0, 59), 2)}Z`;
const sha = () => Array.from({ length: 40 }, () => pick([..."0123456789abcdef"])).join("");
const uuid = () =>
  `${sha().slice(0, 8)}-${sha().slice(0, 4)}-4${sha().slice(0, 3)}-a${sha().slice(0, 3)}-${sha().slice(0, 12)}`;
const amount = () =>
  pick([
    `$${int(1, 999)},${pad(int(0, 999), 3)},${pad(int(0, 999), 3)}.${pad(int(0, 99), 2)}`,
    `€${int(1, 99)} ${pad(int(0, 999), 3)},${pad(int(0, 99), 2)}`,
    `${int(1, 9)} ${pad(int(0, 999), 3)} ${pad(int(0, 999), 3)}`,
  ]);
const NOT_NAMES = [
  "Customer Success",
  "Order Status",
  "Acme Cloud Platform",
  "New York",
  "Premium Plan",
  "Support Team",
  "Monday Morning",
  "Black Friday",
  "Release Notes",
  "United Kingdom",
  "Standard Shipping",
  "Green Valley Farms",
];

// ---- templates: each returns a list of parts (strings, { e: TYPE, v }, { k: kind, i: imitates, v }) ----
const E = (type, value) => ({ e: type, v: value });
const K = (kind, imitates, value) => ({ k: kind, i: imitates, v: value });

const TEMPLATES = [
  // pattern types, plain and in other forms
  () => ["Please reply to ", E("EMAIL", email()), " before Friday."],
  () => ['{"customer_email": "', E("EMAIL", email()), '", "tier": "gold"}'],
  () => ["contact: ", E("EMAIL", obfuscatedEmail()), " (from the signup form)"],
  () => ["Write to ", E("EMAIL", obfuscatedEmail()), " if the parcel is late."],
  () => [
    "Card on file ",
    E("CREDIT_CARD", cardText()),
    ", expiry ",
    `${pad(int(1, 12), 2)}/${int(27, 31)}`,
    ".",
  ],
  () => ["charge failed card=", E("CREDIT_CARD", cardText()), " amount=", amount()],
  () => ["Refund to IBAN ", E("IBAN", ibanText()), " please, reference ", invoice(), "."],
  () => ['{"iban":"', E("IBAN", ibanText()), '","currency":"EUR"}'],
  () => ["SSN: ", E("US_SSN", ssnText()), "\n"],
  () => ["Her social security number is ", E("US_SSN", ssnText()), " per the form."],
  () => ["login from ", E("IP_ADDRESS", ipv4()), " at ", timestamp()],
  () => [
    "client_ip=",
    E("IP_ADDRESS", pick([ipv4, ipv6])()),
    " status=200 agent=",
    pick(PRODUCTS),
    "/",
    K("version", "IP_ADDRESS", v4()),
  ],
  () => ["Peer address ", E("IP_ADDRESS", ipv6()), " dropped the connection"],
  () => ["device ", E("MAC_ADDRESS", mac()), " joined the network"],
  () => ["Call me on ", E("PHONE", phoneText()), " after six."],
  () => ["Mobile: ", E("PHONE", phoneText()), "\nOffice hours 9-5"],
  () => ["phone=", E("PHONE", phoneText()), " order=", orderId()],
  () => ["token ", E("SECRET", secret()), " was committed by mistake"],
  () => ["export API_KEY=", E("SECRET", secret())],
  // look-alikes that must stay
  () => [pick(PRODUCTS), " ", K("version", "IP_ADDRESS", v4()), " rolled out to all regions."],
  () => [
    "user-agent: ",
    pick(["acme-cli", "orchid-sync", "relayd"]),
    "/",
    K("version", "IP_ADDRESS", v4()),
    " (linux; x64)",
  ],
  () => [
    '{"version": "',
    K("version", "IP_ADDRESS", v4()),
    '", "build": "',
    K("version", "IP_ADDRESS", v4()),
    '"}',
  ],
  () => [
    "Upgraded to v",
    K("version", "IP_ADDRESS", v4()),
    " last night; release ",
    K("version", "IP_ADDRESS", v4()),
    " is next.",
  ],
  () => [
    "build=",
    K("version", "IP_ADDRESS", v4()),
    " firmware=",
    K("version", "IP_ADDRESS", v4()),
  ],
  () => [
    "ISBN ",
    K("isbn", "PHONE", isbn13().replace(/^(\d{3})(\d)(\d{3})(\d{5})(\d)$/, "$1-$2-$3-$4-$5")),
    " is out of print.",
  ],
  () => ["isbn=", K("isbn", "PHONE", isbn13()), " qty=", String(int(1, 9))],
  () => [
    "Book: ISBN-10 ",
    K("isbn", "PHONE", isbn10().replace(/^(\d)(\d{3})(\d{5})(.)$/, "$1-$2-$3-$4")),
    ", paperback.",
  ],
  () => ['{"isbn": "', K("isbn", "PHONE", isbn10()), '", "title": "Field Notes"}'],
  () => ["UPS tracking ", K("tracking", "SECRET", upsTracking()), " shows delivered."],
  () => [
    "FedEx tracking number ",
    K("tracking", "CREDIT_CARD", fedexExpress()),
    ", left at the door.",
  ],
  () => [
    "tracking=",
    K("tracking", "CREDIT_CARD", pick([fedexExpress, fedexGround])()),
    " carrier=fedex",
  ],
  () => [
    "EAN ",
    K("product", "CREDIT_CARD", ean13()),
    " and UPC ",
    K("product", "CREDIT_CARD", upcA()),
    " are both on the box.",
  ],
  () => ["SKU ", K("product", "PHONE", sku()), " restocked (", String(int(2, 80)), " units)."],
  () => [
    '{"sku": "',
    K("product", "PHONE", sku()),
    '", "barcode": "',
    K("product", "CREDIT_CARD", ean13()),
    '"}',
  ],
  () => [
    "Order ",
    K("order", "PHONE", orderId()),
    " invoice ",
    K("invoice", "PHONE", invoice()),
    " paid ",
    amount(),
    ".",
  ],
  () => [
    "Shipped on ",
    K("date", "DATE_OF_BIRTH", dateText(int(2019, 2026))),
    ", delivered ",
    K("date", "DATE_OF_BIRTH", dateText(int(2019, 2026))),
    ".",
  ],
  () => [
    "commit ",
    K("hash", "SECRET", sha()),
    " request ",
    K("uuid", "SECRET", uuid()),
    " took ",
    String(int(3, 900)),
    " ms",
  ],
  () => ["Total revenue ", K("amount", "PHONE", amount()), " in ", String(int(2019, 2026)), "."],
  () => [
    "Listening on ",
    K("host", "IP_ADDRESS", `localhost:${int(1024, 9999)}`),
    " since ",
    K("time", "PHONE", `${pad(int(0, 23), 2)}:${pad(int(0, 59), 2)}:${pad(int(0, 59), 2)}`),
  ],
  () => [
    "Coordinates ",
    K("coordinates", "PHONE", `${int(10, 60)}.${digits(4)}, ${int(10, 60)}.${digits(4)}`),
    " for the depot.",
  ],
  () => [
    "Hi team, the ",
    K("phrase", "PERSON", pick(NOT_NAMES)),
    " page moved to ",
    K("phrase", "PERSON", pick(NOT_NAMES)),
    ".",
  ],
  () => [
    "Dear Customer, your ",
    K("phrase", "PERSON", pick(NOT_NAMES)),
    " renews on ",
    K("date", "DATE_OF_BIRTH", dateText(int(2026, 2027))),
    ".",
  ],
  () => [
    "Meeting notes: ",
    K("phrase", "PERSON", pick(NOT_NAMES)),
    " review moved to ",
    pick(MONTHS),
    " ",
    String(int(1, 28)),
    ".",
  ],
  // names
  () => ["Hi ", E("PERSON", anyName()), ",\n\nThanks for your order."],
  () => ["Dear ", E("PERSON", latinName(2)), ", your refund is on its way."],
  () => ["Kind regards,\n", E("PERSON", anyName()), "\nAcme Support"],
  () => ["Best,\n", E("PERSON", latinName(2)), "\n"],
  () => ['From: "', E("PERSON", anyName()), '" <', E("EMAIL", email()), ">\nSubject: late parcel"],
  () => ["To: ", E("PERSON", latinName(2)), " <", E("EMAIL", email()), ">"],
  () => ['{"name": "', E("PERSON", anyName()), '", "plan": "pro"}'],
  () => ['{"customer": {"full_name": "', E("PERSON", latinName(pick([2, 3]))), '", "tier": 2}}'],
  () => ["Name: ", E("PERSON", anyName()), "\nStatus: active"],
  () => ["My name is ", E("PERSON", latinName(2)), " and I want to cancel."],
  () => [
    "Attendees:\n- ",
    E("PERSON", latinName(2)),
    "\n- ",
    E("PERSON", latinName(2)),
    "\n- ",
    E("PERSON", anyName()),
    "\n",
  ],
  () => [
    "Escalated by ",
    E("PERSON", latinName(2)),
    " to ",
    E("PERSON", latinName(2)),
    " on ",
    K("date", "DATE_OF_BIRTH", dateText(int(2024, 2026))),
    ".",
  ],
  () => ["I spoke with ", E("PERSON", latinName(2)), " yesterday about the invoice."],
  () => ["お客様: ", E("PERSON", pick(SCRIPT_NAMES.filter(([c]) => c === "ja"))[1]), " 様"],
  () => [
    "Клиент: ",
    E("PERSON", pick(SCRIPT_NAMES.filter(([c]) => c === "ru" || c === "uk"))[1]),
    ", заказ ",
    orderId(),
  ],
  () => [
    "联系人：",
    E("PERSON", pick(SCRIPT_NAMES.filter(([c]) => c === "zh"))[1]),
    "，电话 ",
    E("PHONE", `+86 1${int(30, 89)} ${int(1000, 9999)} ${int(1000, 9999)}`),
  ],
  () => ["customer_name=", E("PERSON", latinName(2).replace(" ", "_")), " order=", orderId()],
  () => ["Thanks ", E("PERSON", latinName(1)), "! The ticket is closed."],
  // addresses
  () => ["Ship to: ", E("ADDRESS", address("US")), "\n"],
  () => ["Please send it to ", E("ADDRESS", address("UK")), " instead."],
  () => ["Lieferadresse: ", E("ADDRESS", address("DE")), "\n"],
  () => ["Adresse de livraison : ", E("ADDRESS", address("FR")), "."],
  () => ["Leveransadress: ", E("ADDRESS", address("SE")), "\n"],
  () => ["住所: ", E("ADDRESS", address("JP")), "\n"],
  () => ['{"address": "', E("ADDRESS", address().replace(/\n/g, ", ")), '", "verified": true}'],
  () => [
    "I moved to ",
    E("ADDRESS", address(pick(["US", "UK", "DE", "FR", "SE"]))),
    " last month.",
  ],
  // dates of birth
  () => ["DOB: ", E("DATE_OF_BIRTH", dateText()), "\n"],
  () => ["She was born on ", E("DATE_OF_BIRTH", dateText()), " in a small town."],
  () => [
    '{"date_of_birth": "',
    E("DATE_OF_BIRTH", `${int(1940, 2006)}-${pad(int(1, 12), 2)}-${pad(int(1, 28), 2)}`),
    '"}',
  ],
  () => [
    "Birthday ",
    E("DATE_OF_BIRTH", dateText()),
    ", member since ",
    K("date", "DATE_OF_BIRTH", dateText(int(2015, 2025))),
    ".",
  ],
  () => [
    "date of birth ",
    E("DATE_OF_BIRTH", dateText()),
    "; account opened ",
    K("date", "DATE_OF_BIRTH", dateText(int(2010, 2025))),
  ],
  // everything at once, as a support ticket
  () => [
    "Ticket ",
    K("order", "PHONE", orderId()),
    "\nFrom: ",
    E("PERSON", latinName(2)),
    " <",
    E("EMAIL", email()),
    ">\nPhone: ",
    E("PHONE", phoneText()),
    "\nAddress: ",
    E("ADDRESS", address(pick(["US", "UK", "DE"]))),
    "\nDOB: ",
    E("DATE_OF_BIRTH", dateText()),
    "\nApp ",
    pick(PRODUCTS),
    " ",
    K("version", "IP_ADDRESS", v4()),
    " crashed after ",
    K("time", "PHONE", `${int(2, 9)}:${pad(int(0, 59), 2)}`),
    ".\n",
  ],
];

function build(parts) {
  let text = "";
  const entities = [];
  const lookalikes = [];
  for (const part of parts) {
    const start = text.length;
    if (typeof part === "string") {
      text += part;
      continue;
    }
    text += part.v;
    if ("e" in part) entities.push({ type: part.e, start, end: text.length, value: part.v });
    else
      lookalikes.push({ kind: part.k, imitates: part.i, start, end: text.length, value: part.v });
  }
  return { text, entities, lookalikes };
}

function generate() {
  const rows = [];
  for (const [template, make] of TEMPLATES.entries()) {
    for (let count = 0; count < ROWS_PER_TEMPLATE; count++) {
      const row = build(make());
      rows.push({
        id: `gen-${pad(rows.length + 1, 4)}`,
        ...row,
        subset: template % 3 === 2 ? "generated_test" : "generated_dev",
        meta: { template },
        source: "packages/redact/corpus/generate.mjs",
        license: "MIT",
      });
    }
  }
  return `${rows.map((row) => JSON.stringify(row)).join("\n")}\n`;
}

const output = generate();
if (process.argv.includes("--check")) {
  const current = readFileSync(OUT, "utf8");
  if (current !== output) {
    console.error(
      `[redact] ${OUT} differs from a fresh run of corpus/generate.mjs; run it again and commit.`,
    );
    process.exit(1);
  }
  console.log(`[redact] ${OUT} is up to date.`);
} else {
  writeFileSync(OUT, output);
  console.log(`[redact] wrote ${output.split("\n").length - 1} rows to ${OUT}`);
}
