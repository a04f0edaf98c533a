// Writes corpus/pii-locales.jsonl: labelled rows in thirteen languages and country formats for
// the context detectors (PERSON, ADDRESS, DATE_OF_BIRTH) and the misses of a trial on fresh formats
// (spelled-out emails, national phone formats, version strings, SSNs without a cue).
//
//   node corpus/generate-locales.mjs            # rewrites corpus/pii-locales.jsonl (same bytes every run)
//   node corpus/generate-locales.mjs --check    # exits 1 if the file on disk differs from a fresh run
//
// Every row: { id, text, entities: [{ type, start, end, value }], lookalikes: [{ kind, imitates,
// start, end, value }], subset, meta: { template, language } }. A template's index plus its
// language's index decides its subset: every third is `locales_test` (measured, never read
// while writing a rule), the rest `locales_dev`, so each kind of template (a name with no cue,
// an address, a birth date…) is test in a third of the languages. The templates are sentences written for this file;
// none is taken from the unit tests or from any public corpus. Names, streets and towns are
// short lists typed here; the detectors' lexicon (src/lexicon/) is typed separately, and
// `bench/pii-measure.mjs` prints how many generated names it also holds.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parsePhoneNumberFromString } from "libphonenumber-js/max";
import { seededRandom } from "./seeded-random.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const OUT = join(here, "pii-locales.jsonl");
const SEED = 35_2026;
const ROWS_PER_TEMPLATE = 8;

// ---- seeded random (mulberry32, seeded-random.mjs) ----
const { random, int, pick, digits, pad } = seededRandom(SEED);
const upper = (count, alphabet = "ABDEFGHJLNPQRSTUWXYZ") =>
  Array.from({ length: count }, () => pick([...alphabet])).join("");

// ---- values per locale ----
const L = {
  en_US: {
    given: ["Marcus", "Tamika", "Dwayne", "Colton", "Brianna", "Hector", "Latoya", "Trevor"],
    family: [
      "Whitfield",
      "Abernathy",
      "Holloway",
      "Pemberton",
      "Castellano",
      "Okonkwo",
      "Brennan",
      "Delacroix",
    ],
    region: "US",
  },
  en_GB: {
    given: ["Alistair", "Fiona", "Callum", "Siobhan", "Rhys", "Imogen", "Declan", "Niamh"],
    family: [
      "Featherstone",
      "McAllister",
      "Pritchard",
      "Ashworth",
      "Blackwood",
      "Llewellyn",
      "Hargreaves",
      "Fairbairn",
    ],
    region: "GB",
  },
  de: {
    given: [
      "Jürgen",
      "Annegret",
      "Friederike",
      "Matthias",
      "Henrike",
      "Wiebke",
      "Torben",
      "Svenja",
    ],
    family: [
      "Brandstätter",
      "Hülsmann",
      "Oberländer",
      "Wiesinger",
      "Rothenberger",
      "Eichhorn",
      "Lindemann",
      "Kappel",
    ],
    region: "DE",
  },
  fr: {
    given: [
      "Aurélien",
      "Ségolène",
      "Thibault",
      "Maëlle",
      "Grégoire",
      "Capucine",
      "Mathis",
      "Solène",
    ],
    family: [
      "Lefèvre",
      "Dubreuil",
      "Beaulieu",
      "Chevalier",
      "Morvan",
      "Garnier",
      "Lacroix",
      "Fontaine",
    ],
    region: "FR",
  },
  es: {
    given: [
      "Alejandro",
      "Inmaculada",
      "Rodrigo",
      "Begoña",
      "Íñigo",
      "Macarena",
      "Gonzalo",
      "Rocío",
    ],
    family: [
      "Etxeberria Ruiz",
      "Villanueva",
      "Castañeda Mora",
      "Iglesias Pardo",
      "Montoya",
      "Arrieta",
      "Olmedo Sanz",
      "Zubiri",
    ],
    region: "ES",
  },
  it: {
    given: [
      "Giacomo",
      "Benedetta",
      "Lorenzo",
      "Ginevra",
      "Tommaso",
      "Ludovica",
      "Edoardo",
      "Caterina",
    ],
    family: [
      "Bonaventura",
      "Santangelo",
      "Ferraresi",
      "Lombardini",
      "Pellegrini",
      "Zanetti",
      "Marchesini",
      "Giordano",
    ],
    region: "IT",
  },
  nl: {
    given: ["Joris", "Femke", "Maarten", "Anouk", "Bram", "Lieke", "Wouter", "Sanne"],
    family: [
      "van den Heuvel",
      "de Groot",
      "Bakker",
      "Visser",
      "van Dijk",
      "Mulder",
      "de Vries",
      "Verhoeven",
    ],
    region: "NL",
  },
  sv: {
    given: ["Linnea", "Oskar", "Ebba", "Viktor", "Saga", "Axel", "Elsa", "Hugo"],
    family: [
      "Bergström",
      "Sjöberg",
      "Lundgren",
      "Åkesson",
      "Holmqvist",
      "Wallin",
      "Engström",
      "Nyberg",
    ],
    region: "SE",
  },
  pl: {
    given: [
      "Katarzyna",
      "Wojciech",
      "Agnieszka",
      "Grzegorz",
      "Małgorzata",
      "Przemysław",
      "Zofia",
      "Bartosz",
    ],
    family: [
      "Zieliński",
      "Kamińska",
      "Lewandowski",
      "Dąbrowska",
      "Wójcik",
      "Kozłowski",
      "Jankowska",
      "Szymański",
    ],
    region: "PL",
  },
  ja: {
    given: ["健太", "美咲", "翔太", "陽菜", "大輔", "さくら", "拓海", "結衣"],
    family: ["佐藤", "鈴木", "高橋", "田中", "渡辺", "伊藤", "山本", "中村"],
    region: "JP",
  },
  ja_romaji: {
    given: ["Kenta", "Misaki", "Shota", "Haruna", "Daisuke", "Sakura", "Takumi", "Yui"],
    family: [
      "Takahashi",
      "Watanabe",
      "Yamaguchi",
      "Matsumoto",
      "Inoue",
      "Kimura",
      "Hayashi",
      "Shimizu",
    ],
    region: "JP",
  },
  zh: {
    given: ["伟", "娜", "晓明", "静怡", "建国", "丽华", "子轩", "欣怡"],
    family: ["王", "李", "张", "刘", "陈", "杨", "黄", "欧阳"],
    givenLatin: ["Wei", "Na", "Xiaoming", "Jingyi", "Jianguo", "Lihua", "Zixuan", "Xinyi"],
    familyLatin: ["Wang", "Li", "Zhang", "Liu", "Chen", "Yang", "Huang", "Zhou"],
    region: "CN",
  },
  ko: {
    given: ["민준", "서연", "지훈", "하은", "도윤", "수빈", "예준", "지민"],
    family: ["김", "이", "박", "최", "정", "강", "조", "윤"],
    givenLatin: [
      "Min-jun",
      "Seo-yeon",
      "Ji-hoon",
      "Ha-eun",
      "Do-yun",
      "Su-bin",
      "Ye-jun",
      "Ji-min",
    ],
    familyLatin: ["Kim", "Lee", "Park", "Choi", "Jung", "Kang", "Cho", "Yoon"],
    region: "KR",
  },
};

/** A full name in the order of its language (family name first in Japanese, Chinese, Korean). */
function fullName(language) {
  const values = L[language];
  if (language === "ja")
    return `${pick(values.family)}${pick(["", " ", "\u3000"])}${pick(values.given)}`;
  if (language === "zh" || language === "ko") return `${pick(values.family)}${pick(values.given)}`;
  if (language === "ja_romaji")
    return random() < 0.5
      ? `${pick(values.family)} ${pick(values.given)}`
      : `${pick(values.given)} ${pick(values.family)}`;
  return `${pick(values.given)} ${pick(values.family)}`;
}

// ---- phone numbers: random national numbers that libphonenumber calls valid ----
const PHONE_PREFIXES = {
  US: ["217", "512", "937", "208", "253", "919", "614", "303"],
  GB: ["7700", "7911", "7400", "113", "161", "20", "131"],
  DE: ["151", "160", "171", "30", "40", "89", "221"],
  FR: ["6", "7", "1", "4", "5"],
  ES: ["6", "91", "93", "95"],
  IT: ["347", "333", "320", "02", "06", "011"],
  NL: ["6", "20", "10", "30"],
  SE: ["70", "73", "8", "31"],
  PL: ["512", "601", "22", "12", "58"],
  JP: ["90", "80", "3", "6"],
  CN: ["138", "139", "150", "186", "10", "21"],
  KR: ["10", "2", "31"],
};
const NATIONAL_LENGTH = {
  US: 10,
  GB: 10,
  DE: 11,
  FR: 9,
  ES: 9,
  IT: 10,
  NL: 9,
  SE: 9,
  PL: 9,
  JP: 10,
  CN: 11,
  KR: 10,
};
function phoneNumber(region) {
  for (let attempt = 0; attempt < 200; attempt++) {
    const prefix = pick(PHONE_PREFIXES[region]);
    let length = NATIONAL_LENGTH[region];
    if (region === "GB" && prefix === "20") length = 10;
    if (region === "DE" && prefix.length === 2) length = 10;
    if (region === "JP" && prefix.length === 1) length = 9;
    if (region === "CN" && prefix.length === 2) length = 10;
    if (region === "KR" && prefix === "2") length = 9;
    if (region === "IT" && prefix.startsWith("0")) length = 10;
    let national = prefix + digits(length - prefix.length);
    if (region === "US") national = `${prefix}${int(2, 9)}${digits(6)}`;
    const leading = region === "IT" || region === "US" ? "" : "";
    const parsed = parsePhoneNumberFromString(`${leading}${national}`, region);
    const withZero = parsePhoneNumberFromString(`0${national}`, region);
    const number = parsed?.isValid() ? parsed : withZero?.isValid() ? withZero : undefined;
    if (number === undefined) continue;
    const style = random();
    if (style < 0.55) return number.formatNational();
    if (style < 0.8) return number.formatInternational();
    // Hand-written national variants: dots or hyphens instead of spaces.
    return number.formatNational().replace(/ /g, pick([" ", "-", "."]));
  }
  throw new Error(`no valid ${region} number in 200 attempts`);
}

// ---- dates ----
const MONTHS = {
  en: [
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
  ],
  de: [
    "Januar",
    "Februar",
    "März",
    "April",
    "Mai",
    "Juni",
    "Juli",
    "August",
    "September",
    "Oktober",
    "November",
    "Dezember",
  ],
  fr: [
    "janvier",
    "février",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
  ],
  es: [
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
  ],
  it: [
    "gennaio",
    "febbraio",
    "marzo",
    "aprile",
    "maggio",
    "giugno",
    "luglio",
    "agosto",
    "settembre",
    "ottobre",
    "novembre",
    "dicembre",
  ],
  nl: [
    "januari",
    "februari",
    "maart",
    "april",
    "mei",
    "juni",
    "juli",
    "augustus",
    "september",
    "oktober",
    "november",
    "december",
  ],
  sv: [
    "januari",
    "februari",
    "mars",
    "april",
    "maj",
    "juni",
    "juli",
    "augusti",
    "september",
    "oktober",
    "november",
    "december",
  ],
  pl: [
    "stycznia",
    "lutego",
    "marca",
    "kwietnia",
    "maja",
    "czerwca",
    "lipca",
    "sierpnia",
    "września",
    "października",
    "listopada",
    "grudnia",
  ],
};
function dateParts(birth) {
  return { year: birth ? int(1941, 2005) : int(2019, 2026), month: int(1, 12), day: int(1, 28) };
}
/** A date written the way the language writes it, in words or in numbers. */
function writtenDate(language, birth) {
  const { year, month, day } = dateParts(birth);
  const style = random();
  const months = MONTHS[language.startsWith("en") || language === "ja_romaji" ? "en" : language];
  if (language === "ja" || language === "zh") return `${year}年${month}月${day}日`;
  if (language === "ko") return `${year}년 ${month}월 ${day}일`;
  if (style < 0.25) return `${year}-${pad(month, 2)}-${pad(day, 2)}`;
  if (language === "en_US" || language === "ja_romaji") {
    if (style < 0.6) return `${months[month - 1]} ${day}, ${year}`;
    return `${pad(month, 2)}/${pad(day, 2)}/${year}`;
  }
  if (language === "en_GB") {
    if (style < 0.6) return `${day} ${months[month - 1]} ${year}`;
    return `${pad(day, 2)}/${pad(month, 2)}/${year}`;
  }
  if (style < 0.6) {
    if (language === "es") return `${day} de ${months[month - 1]} de ${year}`;
    if (language === "de") return `${day}. ${months[month - 1]} ${year}`;
    return `${day} ${months[month - 1]} ${year}`;
  }
  const separator = { de: ".", pl: ".", nl: "-", sv: "-" }[language] ?? "/";
  if (language === "sv") return `${year}-${pad(month, 2)}-${pad(day, 2)}`;
  return `${pad(day, 2)}${separator}${pad(month, 2)}${separator}${year}`;
}

// ---- addresses in each country's own order, with the country's postcode ----
const ADDRESS = {
  en_US() {
    const [town, state, zip] = pick([
      ["Springfield", "IL", "62704"],
      ["Austin", "TX", "78701"],
      ["Dayton", "OH", "45402"],
      ["Boise", "ID", "83702"],
      ["Tacoma", "WA", "98402"],
      ["Raleigh", "NC", "27601"],
    ]);
    const street = pick([
      "Maple Ridge Road",
      "Cedar Hollow Lane",
      "Lakeshore Drive",
      "Willow Creek Court",
      "Harbor Point Blvd",
      "W Elm St",
    ]);
    const unit = pick(["", "", ` Apt ${int(1, 30)}${pick(["", "B"])}`, `, Suite ${int(100, 450)}`]);
    return pick([
      `${int(10, 9999)} ${street}${unit}, ${town}, ${state} ${zip}`,
      `${int(10, 9999)} ${street}${unit}\n${town}, ${state} ${zip}-${digits(4)}`,
      `PO Box ${int(100, 9999)}, ${town}, ${state} ${zip}`,
    ]);
  },
  en_GB() {
    const [town, area] = pick([
      ["Harrogate", "HG1"],
      ["Bristol", "BS3"],
      ["Leeds", "LS6"],
      ["Norwich", "NR2"],
      ["Cardiff", "CF10"],
      ["Exeter", "EX4"],
    ]);
    const postcode = `${area} ${int(1, 9)}${upper(2)}`;
    const street = pick([
      "Kestrel Close",
      "Mill Lane",
      "Chapel Road",
      "Orchard Way",
      "Victoria Terrace",
      "Queen's Walk",
    ]);
    return pick([
      `${int(1, 180)} ${street}, ${town} ${postcode}`,
      `Flat ${int(1, 12)}, ${int(1, 180)} ${street}, ${town}, ${postcode}`,
      `${pick(["Rose Cottage", "The Old Rectory", "Ivy House"])}, ${street}, ${town} ${postcode}`,
    ]);
  },
  de() {
    const [town, code] = pick([
      ["Berlin", `10${int(115, 999)}`],
      ["Rosenheim", "83022"],
      ["Heidelberg", "69117"],
      ["Münster", "48143"],
      ["Freiburg im Breisgau", "79098"],
      ["Kiel", "24103"],
    ]);
    const street = pick([
      "Kastanienallee",
      "Hauptstraße",
      "Am Mühlbach",
      "Bahnhofstr.",
      "Schillerplatz",
      "Lessingweg",
      "Berliner Straße",
    ]);
    return pick([
      `${street} ${int(1, 120)}${pick(["", "a", "b"])}, ${code} ${town}`,
      `${street} ${int(1, 120)}, ${pick(["2. OG", "Hinterhaus", "3. Etage"])}, ${code} ${town}`,
      `Postfach ${int(10, 99)} ${pad(int(0, 99), 2)} ${pad(int(0, 99), 2)}, ${code} ${town}`,
    ]);
  },
  fr() {
    const [town, code] = pick([
      ["Strasbourg", "67000"],
      ["Lyon", `6900${int(1, 9)}`],
      ["Nantes", "44000"],
      ["Toulouse", "31000"],
      ["Rennes", "35000"],
      ["Montpellier", "34000"],
    ]);
    const street = pick([
      "rue des Tanneurs",
      "avenue Jean Jaurès",
      "allée des Cerisiers",
      "boulevard Voltaire",
      "place du Marché",
      "chemin des Vignes",
    ]);
    return pick([
      `${int(1, 140)}${pick(["", " bis", " ter"])} ${street}, ${code} ${town}`,
      `Appartement ${int(1, 40)}, ${int(1, 140)} ${street}, ${code} ${town}`,
      `${int(1, 140)}, ${street}\n${code} ${town.toUpperCase()}`,
      `BP ${int(10, 999)}, ${code} ${town} Cedex`,
    ]);
  },
  es() {
    const [town, code] = pick([
      ["Madrid", `280${pad(int(1, 50), 2)}`],
      ["Sevilla", "41001"],
      ["Zaragoza", "50001"],
      ["Barcelona", "08008"],
      ["Bilbao", "48001"],
      ["Valencia", "46002"],
    ]);
    const street = pick([
      "Calle de Alcalá",
      "Avenida de la Constitución",
      "C/ Mayor",
      "Paseo de Gracia",
      "Calle Gran Vía",
      "Plaza de España",
    ]);
    return pick([
      `${street} ${int(1, 200)}, ${code} ${town}`,
      `${street}, ${int(1, 200)}, ${int(1, 9)}º ${pick(["A", "B", "izda.", "dcha."])}, ${code} ${town}`,
      `${street} ${int(1, 200)}, ${pick(["bajo", "ático", "2º 1ª"])}, ${code} ${town} (${town === "Madrid" ? "Madrid" : "España"})`,
    ]);
  },
  it() {
    const [town, code, province] = pick([
      ["Milano", "20121", "MI"],
      ["Torino", "10121", "TO"],
      ["Firenze", "50122", "FI"],
      ["Roma", "00185", "RM"],
      ["Bologna", "40126", "BO"],
      ["Napoli", "80134", "NA"],
    ]);
    const street = pick([
      "Via Giuseppe Garibaldi",
      "Corso Vittorio Emanuele II",
      "Piazza della Signoria",
      "Viale dei Mille",
      "Via Roma",
      "Largo Augusto",
    ]);
    return pick([
      `${street} ${int(1, 180)}, ${code} ${town} ${province}`,
      `${street}, ${int(1, 180)}, int. ${int(1, 20)}, ${code} ${town} (${province})`,
      `${street} ${int(1, 180)}/${pick(["A", "B"])}\n${code} ${town}`,
    ]);
  },
  nl() {
    const [town] = pick([
      ["Amsterdam"],
      ["Utrecht"],
      ["Rotterdam"],
      ["Groningen"],
      ["Haarlem"],
      ["Eindhoven"],
    ]);
    const postcode = `${int(1011, 9999)} ${upper(2, "ABCEGHJKLMNPRTVWXZ")}`;
    const street = pick([
      "Prinsengracht",
      "Kerkstraat",
      "Oudegracht",
      "Bloemenlaan",
      "Marktplein",
      "Julianaweg",
    ]);
    return pick([
      `${street} ${int(1, 400)}${pick(["", "-1", "A", " hs"])}, ${postcode} ${town}`,
      `${street} ${int(1, 400)}\n${postcode} ${town.toUpperCase()}`,
      `Postbus ${int(100, 9999)}, ${postcode} ${town}`,
    ]);
  },
  sv() {
    const [town, code] = pick([
      ["Stockholm", `11${int(1, 9)} ${int(10, 99)}`],
      ["Göteborg", `41${int(1, 9)} ${int(10, 99)}`],
      ["Uppsala", `75${int(1, 9)} ${int(10, 99)}`],
      ["Malmö", `21${int(1, 9)} ${int(10, 99)}`],
      ["Umeå", `90${int(1, 9)} ${int(10, 99)}`],
    ]);
    const street = pick([
      "Storgatan",
      "Drottninggatan",
      "Björkvägen",
      "Kungsgatan",
      "Skolgränd",
      "Torget",
    ]);
    return pick([
      `${street} ${int(1, 90)}, ${code} ${town}`,
      `${street} ${int(1, 90)} lgh ${int(1001, 1404)}, ${code} ${town}`,
      `Box ${int(100, 9999)}, ${code} ${town}`,
    ]);
  },
  pl() {
    const [town, code] = pick([
      ["Warszawa", `0${int(0, 4)}-${int(100, 999)}`],
      ["Gdańsk", `80-${int(100, 999)}`],
      ["Kraków", `3${int(0, 1)}-${int(100, 999)}`],
      ["Wrocław", `5${int(0, 4)}-${int(100, 999)}`],
      ["Poznań", `6${int(0, 1)}-${int(100, 999)}`],
    ]);
    const street = pick([
      "ul. Marszałkowska",
      "ul. Długa",
      "al. Jerozolimskie",
      "os. Tysiąclecia",
      "ul. Kwiatowa",
      "pl. Wolności",
    ]);
    return pick([
      `${street} ${int(1, 120)}, ${code} ${town}`,
      `${street} ${int(1, 120)}/${int(1, 60)}, ${code} ${town}`,
      `${street} ${int(1, 120)} m. ${int(1, 60)}\n${code} ${town}`,
    ]);
  },
  ja() {
    const [prefecture, city, code] = pick([
      ["大阪府", "大阪市北区梅田", "530-0001"],
      ["東京都", "新宿区西新宿", "160-0023"],
      ["神奈川県", "横浜市中区山下町", "231-0023"],
      ["愛知県", "名古屋市中村区名駅", "450-0002"],
      ["福岡県", "福岡市博多区博多駅前", "812-0011"],
    ]);
    const block = pick([
      `${int(1, 5)}丁目${int(1, 20)}番${int(1, 30)}号`,
      `${int(1, 5)}-${int(1, 20)}-${int(1, 30)}`,
    ]);
    return pick([
      `〒${code} ${prefecture}${city}${block}`,
      `${prefecture}${city}${block}`,
      `〒${code}\n${prefecture}${city}${block} ${pick(["メゾン青葉", "サンハイツ"])}${int(101, 905)}号室`,
    ]);
  },
  ja_romaji() {
    const [district, city, code] = pick([
      ["Umeda, Kita-ku", "Osaka", "530-0001"],
      ["Nishi-Shinjuku, Shinjuku-ku", "Tokyo", "160-0023"],
      ["Yamashita-cho, Naka-ku", "Yokohama", "231-0023"],
      ["Meieki, Nakamura-ku", "Nagoya", "450-0002"],
    ]);
    return pick([
      `${int(1, 5)}-${int(1, 20)}-${int(1, 30)} ${district}, ${city} ${code}`,
      `Room ${int(101, 905)}, ${int(1, 5)}-${int(1, 20)}-${int(1, 30)} ${district}, ${city}, ${code} Japan`,
    ]);
  },
  zh() {
    const [head, code] = pick([
      ["北京市朝阳区建国路", "100022"],
      ["上海市浦东新区世纪大道", "200120"],
      ["广东省深圳市南山区科技园路", "518057"],
      ["浙江省杭州市西湖区文三路", "310012"],
    ]);
    return pick([
      `${head}${int(1, 300)}号`,
      `${head}${int(1, 300)}号${int(1, 30)}楼${int(101, 2508)}室 邮编${code}`,
    ]);
  },
  ko() {
    const [head, code] = pick([
      ["서울특별시 강남구 테헤란로", "06234"],
      ["부산광역시 해운대구 해운대로", "48094"],
      ["경기도 성남시 분당구 판교역로", "13494"],
      ["서울특별시 종로구 세종대로", "03172"],
    ]);
    return pick([
      `${head} ${int(1, 400)}`,
      `(${code}) ${head} ${int(1, 400)}, ${int(1, 20)}층 ${int(101, 1505)}호`,
    ]);
  },
};

// ---- spelled-out emails ----
function spelledEmail(language) {
  const [given] = fullName(
    language.startsWith("ja") || language === "zh" || language === "ko" ? "en_US" : language,
  )
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .split(" ");
  const local = `${given.replace(/[^a-z]/g, "")}${pick(["", ".w", "_k", "84"])}`;
  const domain = pick(["acme", "northwind", "blumen-haus", "correo", "posta"]);
  const tld = pick(["example", "com", "de", "fr", "es", "it", "nl", "se", "pl"]);
  return pick([
    `${local} at ${domain} dot ${tld}`,
    `${local} (at) ${domain} (dot) ${tld}`,
    `${local} [at] ${domain} [dot] ${tld}`,
    `${local} AT ${domain} DOT ${tld}`,
    language === "es" ? `${local} arroba ${domain} punto ${tld}` : `${local} at ${domain}.${tld}`,
  ]);
}

// ---- look-alikes: versions and list numbers ----
function version() {
  return pick([
    () => `${int(1, 30)}.${int(0, 20)}.${int(0, 300)}.${int(0, 9999)}`,
    () => `${int(100, 131)}.0.${int(5000, 6999)}.${int(10, 250)}`,
    () => `10.0.${int(17000, 26000)}.${int(100, 4000)}`,
  ])();
}
const PRODUCTS = [
  "Orchid Sync",
  "Chrome",
  "Edge",
  "Teams",
  "Lumen Desk",
  "Kiwi Agent",
  "Ferry Build",
  "driver",
  "firmware",
  "SDK",
];

function validSsn() {
  for (;;) {
    const area = int(1, 899);
    if (area === 666) continue;
    return `${pad(area, 3)}-${pad(int(1, 99), 2)}-${pad(int(1, 9999), 4)}`;
  }
}

// ---- row assembly ----
const E = (type, value) => ({ type, value });
const K = (kind, imitates, value) => ({ kind, imitates, value });
function assemble(parts) {
  let text = "";
  const entities = [];
  const lookalikes = [];
  for (const part of parts) {
    if (typeof part === "string") {
      text += part;
      continue;
    }
    const start = text.length;
    text += part.value;
    if (part.type !== undefined)
      entities.push({ type: part.type, start, end: text.length, value: part.value });
    else
      lookalikes.push({
        kind: part.kind,
        imitates: part.imitates,
        start,
        end: text.length,
        value: part.value,
      });
  }
  return { text, entities, lookalikes };
}

// ---- templates per language: sentences written for this file ----
// Each returns the parts of one row. Names without a cue, greetings and sign-offs, header lines,
// structured keys, addresses, dates of birth beside dates that are not, phones, spelled emails,
// versions.
const latinName = (language) => fullName(language);
const givenOf = (language) => pick(L[language].given);
const PHRASES = {
  en_US: {
    approved: ["", " approved the refund on Tuesday."],
    greet: ["Hi ", ",\nthe replacement is on its way.\n\nBest regards,\n", ""],
    header: ["From: ", " <support@shop.example>\nTo: ", "\nCc: ", "\nSubject: order update"],
    keys: ["firstName", "lastName", "birthDate"],
    ship: ["Please send the replacement to ", " before Friday."],
    born: [
      ["I was born on ", "."],
      ["DOB: ", ""],
      ["b. ", ""],
      ["Date of birth: ", ""],
    ],
    notBorn: ["Your parcel was delivered on ", "."],
    phone: ["Call me back on ", " after six."],
    email: ["You can also write to ", " if the form fails."],
    mid: ["Yesterday I passed the ticket to ", " and ", " in billing; the app reports ", " ", "."],
  },
  en_GB: {
    approved: ["", " has signed off the claim."],
    greet: ["Dear ", ",\nthank you for your patience.\n\nKind regards,\n", ""],
    header: ["From: ", " <help@store.example>\nTo: ", "\nCc: ", "\nSubject: your complaint"],
    keys: ["first_name", "surname", "date_of_birth"],
    ship: ["The courier will collect it from ", " on Monday."],
    born: [
      ["born ", ""],
      ["DOB ", ""],
      ["Date of birth: ", ""],
      ["b. ", ""],
    ],
    notBorn: ["It was dispatched on ", "."],
    phone: ["Ring ", " and ask for accounts."],
    email: ["Reply to ", " please."],
    mid: ["I spoke to ", " and ", " this morning; the kiosk runs ", " ", "."],
  },
  de: {
    approved: ["", " hat die Erstattung freigegeben."],
    greet: ["Hallo ", ",\ndie Ersatzlieferung ist unterwegs.\n\nMit freundlichen Grüßen\n", ""],
    header: ["Von: ", " <service@laden.example>\nAn: ", "\nCc: ", "\nBetreff: Ihre Bestellung"],
    keys: ["vorname", "nachname", "geburtsdatum"],
    ship: ["Bitte liefern Sie an ", " bis Freitag."],
    born: [
      ["geboren am ", ""],
      ["geb. ", ""],
      ["Geburtsdatum: ", ""],
      ["* ", " in Kiel"],
    ],
    notBorn: ["Die Lieferung kam am ", " an."],
    phone: ["Rufen Sie mich unter ", " zurück."],
    email: ["Schreiben Sie an ", ", falls das Formular hängt."],
    mid: ["Ich habe das Ticket an ", " und ", " weitergegeben; die Kasse läuft mit ", " ", "."],
  },
  fr: {
    approved: ["", " a validé le remboursement mardi."],
    greet: ["Bonjour ", ",\nvotre colis de remplacement est en route.\n\nCordialement,\n", ""],
    header: ["De : ", " <sav@boutique.example>\nÀ : ", "\nCc : ", "\nObjet : votre commande"],
    keys: ["prenom", "nom", "date_naissance"],
    ship: ["Merci de livrer au ", " avant vendredi."],
    born: [
      ["né le ", ""],
      ["née le ", ""],
      ["date de naissance : ", ""],
      ["Né(e) le ", ""],
    ],
    notBorn: ["Le colis a été livré le ", "."],
    phone: ["Rappelez-moi au ", " après 18 h."],
    email: ["Écrivez à ", " si le formulaire ne marche pas."],
    mid: ["J'ai transmis le dossier à ", " et ", " ce matin ; la borne tourne sous ", " ", "."],
  },
  es: {
    approved: ["", " aprobó el reembolso el martes."],
    greet: ["Hola ", ":\nsu pedido de reemplazo ya está en camino.\n\nUn saludo,\n", ""],
    header: ["De: ", " <soporte@tienda.example>\nPara: ", "\nCC: ", "\nAsunto: su pedido"],
    keys: ["nombre", "apellidos", "fecha_nacimiento"],
    ship: ["Envíelo a ", " antes del viernes."],
    born: [
      ["nacido el ", ""],
      ["nacida el ", ""],
      ["fecha de nacimiento: ", ""],
      ["F. nac.: ", ""],
    ],
    notBorn: ["El paquete se entregó el ", "."],
    phone: ["Llámeme al ", " por la tarde."],
    email: ["También puede escribir a ", "."],
    mid: ["Pasé la incidencia a ", " y ", " esta mañana; el terminal usa ", " ", "."],
  },
  it: {
    approved: ["", " ha approvato il rimborso martedì."],
    greet: ["Gentile ", ",\nil pacco sostitutivo è in viaggio.\n\nCordiali saluti,\n", ""],
    header: ["Da: ", " <assistenza@negozio.example>\nA: ", "\nCc: ", "\nOggetto: il suo ordine"],
    keys: ["nome", "cognome", "data_nascita"],
    ship: ["Spedite il reso a ", " entro venerdì."],
    born: [
      ["nato il ", ""],
      ["nata il ", ""],
      ["data di nascita: ", ""],
      ["nato a Roma il ", ""],
    ],
    notBorn: ["Il pacco è stato consegnato il ", "."],
    phone: ["Mi richiami al ", " dopo le 18."],
    email: ["Può scrivere anche a ", "."],
    mid: ["Ho passato la pratica a ", " e ", " stamattina; la cassa usa ", " ", "."],
  },
  nl: {
    approved: ["", " heeft de terugbetaling goedgekeurd."],
    greet: ["Beste ", ",\nje vervangende pakket is onderweg.\n\nMet vriendelijke groet,\n", ""],
    header: [
      "Van: ",
      " <klantenservice@winkel.example>\nAan: ",
      "\nCc: ",
      "\nOnderwerp: je bestelling",
    ],
    keys: ["voornaam", "achternaam", "geboortedatum"],
    ship: ["Stuur het pakket naar ", " voor vrijdag."],
    born: [
      ["geboren op ", ""],
      ["geb. ", ""],
      ["geboortedatum: ", ""],
      ["geboren ", " te Utrecht"],
    ],
    notBorn: ["Het pakket is bezorgd op ", "."],
    phone: ["Bel me terug op ", " na zes uur."],
    email: ["Mail ook naar ", "."],
    mid: ["Ik heb het ticket doorgezet naar ", " en ", "; de kassa draait ", " ", "."],
  },
  sv: {
    approved: ["", " har godkänt återbetalningen."],
    greet: ["Hej ", "!\nErsättningspaketet är på väg.\n\nMed vänliga hälsningar\n", ""],
    header: [
      "Från: ",
      " <kundtjanst@butik.example>\nTill: ",
      "\nKopia: ",
      "\nÄmne: din beställning",
    ],
    keys: ["fornamn", "efternamn", "fodelsedatum"],
    ship: ["Skicka paketet till ", " före fredag."],
    born: [
      ["född ", ""],
      ["f. ", ""],
      ["födelsedatum: ", ""],
      ["Född den ", ""],
    ],
    notBorn: ["Paketet levererades ", "."],
    phone: ["Ring mig på ", " efter sex."],
    email: ["Skriv till ", " om formuläret krånglar."],
    mid: ["Jag skickade ärendet till ", " och ", " i morse; kassan kör ", " ", "."],
  },
  pl: {
    approved: ["", " zatwierdził zwrot we wtorek."],
    greet: ["Dzień dobry ", ",\nprzesyłka zastępcza jest w drodze.\n\nPozdrawiam,\n", ""],
    header: ["Od: ", " <obsluga@sklep.example>\nDo: ", "\nDW: ", "\nTemat: zamówienie"],
    keys: ["imie", "nazwisko", "data_urodzenia"],
    ship: ["Proszę wysłać paczkę na adres ", " do piątku."],
    born: [
      ["urodzony ", ""],
      ["ur. ", ""],
      ["data urodzenia: ", ""],
      ["urodzona ", " w Łodzi"],
    ],
    notBorn: ["Paczka została doręczona ", "."],
    phone: ["Proszę oddzwonić pod numer ", " po 18."],
    email: ["Można też pisać na ", "."],
    mid: ["Przekazałem zgłoszenie do ", " i ", " rano; kasa działa na ", " ", "."],
  },
  ja: {
    approved: ["", "が返金を承認しました。"],
    greet: ["", "様\nいつもご利用ありがとうございます。\n\n担当：", ""],
    header: ["差出人: ", " <support@shop.example>\n宛先: ", "\nCC: ", "\n件名: ご注文について"],
    keys: ["名", "姓", "生年月日"],
    ship: ["お届け先：", "までお送りください。"],
    born: [
      ["生年月日：", ""],
      ["", "生まれ"],
      ["生年月日 ", ""],
      ["誕生日：", ""],
    ],
    notBorn: ["お荷物は", "に配達されました。"],
    phone: ["お電話は", "までお願いします。"],
    email: ["メールは ", " までどうぞ。"],
    mid: ["本日、", "さんと", "さんに引き継ぎました。端末は ", " ", " です。"],
  },
  ja_romaji: {
    approved: ["", " approved the refund yesterday."],
    greet: ["Dear ", ",\nyour replacement has shipped.\n\nBest regards,\n", ""],
    header: ["From: ", " <support@shop.example>\nTo: ", "\nCc: ", "\nSubject: delivery"],
    keys: ["given_name", "family_name", "dob"],
    ship: ["Deliver to ", " please."],
    born: [
      ["born ", ""],
      ["DOB: ", ""],
      ["date of birth ", ""],
      ["b. ", ""],
    ],
    notBorn: ["The parcel arrived on ", "."],
    phone: ["Phone: ", " (weekdays)"],
    email: ["Mail ", " instead."],
    mid: ["I handed it to ", " and ", " at the Osaka office; the terminal runs ", " ", "."],
  },
  zh: {
    approved: ["", "已批准退款。"],
    greet: ["", "您好：\n您的换货已发出。\n\n此致\n", ""],
    header: ["发件人: ", " <kefu@shop.example>\n收件人: ", "\n抄送: ", "\n主题: 订单"],
    keys: ["名", "姓", "出生日期"],
    ship: ["请寄到", "。"],
    born: [
      ["出生日期：", ""],
      ["", "出生"],
      ["生日：", ""],
      ["出生于", ""],
    ],
    notBorn: ["包裹已于", "送达。"],
    phone: ["请致电", "联系我。"],
    email: ["也可以写信到 ", "。"],
    mid: ["我已把工单转给", "和", "，终端版本 ", " ", "。"],
  },
  ko: {
    approved: ["", " 님이 환불을 승인했습니다."],
    greet: ["", " 님, 안녕하세요.\n교환 상품이 발송되었습니다.\n\n감사합니다.\n", ""],
    header: ["보낸 사람: ", " <cs@shop.example>\n받는 사람: ", "\n참조: ", "\n제목: 주문 안내"],
    keys: ["이름", "성", "생년월일"],
    ship: ["배송지: ", ""],
    born: [
      ["생년월일: ", ""],
      ["", " 출생"],
      ["생일: ", ""],
      ["출생일: ", ""],
    ],
    notBorn: ["택배는 ", "에 배송되었습니다."],
    phone: ["연락처: ", ""],
    email: ["메일은 ", " 로 보내 주세요."],
    mid: ["오늘 ", " 님과 ", " 님에게 전달했습니다. 단말기는 ", " ", " 입니다."],
  },
};

/** Templates common to every language; index decides dev (two of three) or test (every third). */
const TEMPLATES = [
  // 0 a name with no cue, as the subject of a sentence
  (language) => {
    const [before, after] = PHRASES[language].approved;
    return [before, E("PERSON", latinName(language)), after];
  },
  // 1 greeting and sign-off
  (language) => {
    const [hello, body, tail] = PHRASES[language].greet;
    const cjk = language === "ja" || language === "zh" || language === "ko";
    return [
      hello,
      E("PERSON", cjk ? fullName(language) : givenOf(language)),
      body,
      E("PERSON", fullName(language)),
      tail,
    ];
  },
  // 2 email header lines
  (language) => {
    const [from, to, cc, subject] = PHRASES[language].header;
    const [, address, toLine] = /^ <([^>]+)>(.*)$/s.exec(to);
    return [
      from,
      E("PERSON", fullName(language)),
      " <",
      E("EMAIL", address),
      `>${toLine}`,
      E("PERSON", fullName(language)),
      cc,
      E("PERSON", fullName(language)),
      subject,
    ];
  },
  // 3 structured keys
  (language) => {
    const [given, family, born] = PHRASES[language].keys;
    const values = L[language];
    return [
      `{"${given}": "`,
      E("PERSON", pick(values.given)),
      `", "${family}": "`,
      E("PERSON", pick(values.family)),
      `", "${born}": "`,
      E("DATE_OF_BIRTH", `${int(1941, 2005)}-${pad(int(1, 12), 2)}-${pad(int(1, 28), 2)}`),
      `", "status": "active"}`,
    ];
  },
  // 4 an address in the country's order
  (language) => {
    const [before, after] = PHRASES[language].ship;
    return [before, E("ADDRESS", ADDRESS[language]()), after];
  },
  // 5 a birth date with its cue, beside a date that is not one
  (language) => {
    const [before, after] = pick(PHRASES[language].born);
    const [deliveredBefore, deliveredAfter] = PHRASES[language].notBorn;
    return [
      before,
      E("DATE_OF_BIRTH", writtenDate(language, true)),
      after,
      language === "ja" || language === "zh" ? "。" : ". ",
      deliveredBefore,
      K("date", "DATE_OF_BIRTH", writtenDate(language, false)),
      deliveredAfter,
    ];
  },
  // 6 a national phone number
  (language) => {
    const [before, after] = PHRASES[language].phone;
    return [before, E("PHONE", phoneNumber(L[language].region)), after];
  },
  // 7 a spelled-out email
  (language) => {
    const [before, after] = PHRASES[language].email;
    return [before, E("EMAIL", spelledEmail(language)), after];
  },
  // 8 names in the middle of a sentence, and a version string that must stay
  (language) => {
    const [before, and, after, space, end] = PHRASES[language].mid;
    return [
      before,
      E("PERSON", fullName(language)),
      and,
      E("PERSON", fullName(language)),
      after,
      K("product", "PERSON", pick(PRODUCTS)),
      space,
      K("version", "IP_ADDRESS", version()),
      end,
    ];
  },
];

// Capitalised words that are not people: places, organisations and products of each country.
const NOT_PEOPLE = {
  en_US: [
    ["Union Pacific", "Salt Lake City", "Google Chrome"],
    "The ",
    " depot near ",
    " still runs ",
    ".",
  ],
  en_GB: [
    ["National Rail", "Milton Keynes", "Microsoft Teams"],
    "The ",
    " desk at ",
    " switched to ",
    ".",
  ],
  de: [["Deutsche Bahn", "Bad Homburg", "Lumen Desk"], "Die ", " hat in ", " auf ", " umgestellt."],
  fr: [["Crédit Agricole", "Le Mans", "Google Chrome"], "Le ", " du ", " utilise ", "."],
  es: [["Banco Santander", "Santa Cruz", "Microsoft Teams"], "El ", " de ", " usa ", "."],
  it: [["Poste Italiane", "Reggio Emilia", "Google Chrome"], "Le ", " di ", " usano ", "."],
  nl: [["Albert Heijn", "Den Haag", "Microsoft Teams"], "De ", " in ", " gebruikt ", "."],
  sv: [["Svenska Handelsbanken", "Västra Frölunda", "Google Chrome"], "", " i ", " kör ", "."],
  pl: [["Poczta Polska", "Zielona Góra", "Microsoft Teams"], "", " w mieście ", " używa ", "."],
  ja: [["日本郵便", "大阪", "Google Chrome"], "", "の", "支店は", "を使っています。"],
  ja_romaji: [["Japan Post", "Kita Ward", "Google Chrome"], "The ", " branch in ", " runs ", "."],
  zh: [["中国邮政", "深圳", "Google Chrome"], "", "在", "使用", "。"],
  ko: [["우체국", "부산", "Google Chrome"], "", " ", " 지점은 ", "을 사용합니다."],
};
TEMPLATES.push((language) => {
  const [[organisation, place, product], a, b, c, d] = NOT_PEOPLE[language];
  return [
    a,
    K("organisation", "PERSON", organisation),
    b,
    K("place", "PERSON", place),
    c,
    K("product", "PERSON", product),
    d,
  ];
});

/** English-only templates: SSNs without a cue, a list of numbers of the same shape, Chinese and Korean names in Latin letters (family name first). */
const EXTRA = {
  en_US: [
    () => ["The form lists ", E("US_SSN", validSsn()), " under the applicant's signature."],
    () => [
      "Part numbers to reorder: ",
      K("number-list", "US_SSN", validSsn()),
      ", ",
      K("number-list", "US_SSN", validSsn()),
      ", ",
      K("number-list", "US_SSN", validSsn()),
      " and ",
      K("number-list", "US_SSN", validSsn()),
      ".",
    ],
    () => {
      const language = pick(["zh", "ko"]);
      const name = `${pick(L[language].familyLatin)} ${pick(L[language].givenLatin)}`;
      return [E("PERSON", name), " confirmed the shipment from Shenzhen."];
    },
    () => [
      "Uploaded with ",
      K("product", "PERSON", "Ferry Build"),
      " ",
      K("version", "IP_ADDRESS", version()),
      " from ",
      E("IP_ADDRESS", `10.${int(0, 255)}.${int(0, 255)}.${int(1, 254)}`),
      ".",
    ],
    () => [
      "Ticket reopened by ",
      E("PERSON", `${pick(L.ko.familyLatin)} ${pick(L.ko.givenLatin)}`),
      " after the call with ",
      E("PERSON", `${pick(L.zh.familyLatin)} ${pick(L.zh.givenLatin)}`),
      ".",
    ],
    () => [
      "He was born in ",
      E("DATE_OF_BIRTH", `${pick(MONTHS.en)} of ${int(1950, 2004)}`),
      " and moved to Ohio in ",
      K("date", "DATE_OF_BIRTH", String(int(2010, 2020))),
      ".",
    ],
  ],
};

const rows = [];
for (const [languageIndex, language] of Object.keys(L).entries()) {
  const templates = [...TEMPLATES, ...(EXTRA[language] ?? [])];
  templates.forEach((template, index) => {
    // Rotating with the language, so every kind of template is test in a third of the
    // languages and every language has test templates of every kind across the set.
    const subset = (index + languageIndex) % 3 === 2 ? "locales_test" : "locales_dev";
    for (let count = 0; count < ROWS_PER_TEMPLATE; count++) {
      const { text, entities, lookalikes } = assemble(template(language));
      rows.push({
        id: `loc-${language}-${pad(index, 2)}-${pad(count, 2)}`,
        text,
        entities,
        lookalikes,
        subset,
        meta: { template: `${language}-${index}`, language },
        source: "packages/redact/corpus/generate-locales.mjs",
        license: "MIT",
      });
    }
  });
}

const output = `${rows.map((row) => JSON.stringify(row)).join("\n")}\n`;
if (process.argv.includes("--check")) {
  let current = "";
  try {
    current = readFileSync(OUT, "utf8");
  } catch {}
  if (current !== output) {
    console.error(
      "[redact] corpus/pii-locales.jsonl is stale: run node corpus/generate-locales.mjs",
    );
    process.exit(1);
  }
  console.log(`corpus/pii-locales.jsonl is up to date (${rows.length} rows)`);
} else {
  writeFileSync(OUT, output);
  console.log(`wrote ${rows.length} rows to corpus/pii-locales.jsonl`);
}
