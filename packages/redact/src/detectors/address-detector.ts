import type { Detector, DetectorMatch, Language } from "../detector.js";

// Street addresses by country format. Each pattern is anchored on what an address cannot do
// without (a house number beside a street word, a postcode of the country's shape, a
// prefecture), and every repetition is bounded, so matching stays linear.
// Capitals and letters by range (Latin with Latin-1 and Extended-A, Greek, Cyrillic), so no
// pattern needs the Unicode flag; no pattern opens with a look-behind (V8 would run it at every
// position): word boundaries are checked in code.
const UPPER = "A-Z\\u00c0-\\u00d6\\u00d8-\\u00de\\u0100-\\u017f\\u0391-\\u03a9\\u0400-\\u042f";
const LETTER = `${UPPER}a-z\\u00df-\\u00f6\\u00f8-\\u00ff\\u0180-\\u024f\\u0300-\\u036f\\u03ac-\\u03ce\\u0430-\\u045f`;
const W = `[${UPPER}][${LETTER}'’.-]*`;
// The street suffixes of USPS Publication 28 (Appendix C1) that are written in full or in
// their standard abbreviation, and the UK's (Close, Mews, Rise…).
const STREET_TYPES =
  "Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Court|Ct|Boulevard|Blvd|Way|Place|Pl|Terrace|Ter|Circle|Cir|Parkway|Pkwy|Highway|Hwy|Close|Crescent|Cres|Gardens|Gdns|Garden|Gdn|Grove|Mews|Row|Walk|Square|Sq|Hill|Hills|Trail|Trl|Loop|Path|Pike|Plaza|Plz|Alley|Aly|Green|Park|View|Vw|Rise|Wharf|Quay" +
  "|Bridge|Brg|Brook|Brooks|Burg|Bypass|Byp|Camp|Canyon|Cyn|Cape|Causeway|Cswy|Center|Ctr|Centers|Cliff|Cliffs|Club|Common|Commons|Corner|Corners|Course|Courts|Cove|Coves|Creek|Crk|Crest|Crossing|Xing|Crossroad|Curve|Dale|Dam|Divide|Drives|Estate|Estates|Expressway|Expy|Extension|Ext|Falls|Fall|Ferry|Field|Fields|Flat|Flats|Ford|Fords|Forest|Forge|Forges|Fork|Forks|Fort|Ft|Freeway|Fwy|Gateway|Glen|Glens|Greens|Harbor|Harbors|Hbr|Haven|Heights|Hts|Hollow|Holw|Inlet|Island|Islands|Isle|Junction|Jct|Junctions|Key|Keys|Knoll|Knolls|Lake|Lakes|Landing|Light|Lights|Lock|Locks|Lodge|Mall|Manor|Manors|Meadow|Meadows|Mill|Mills|Mission|Motorway|Mount|Mountain|Mountains|Mtn|Neck|Orchard|Oval|Overpass|Parks|Parkways|Pass|Passage|Pine|Pines|Plain|Plains|Point|Points|Port|Ports|Prairie|Radial|Ramp|Ranch|Rapid|Rapids|Rest|Ridge|Ridges|River|Roads|Route|Run|Shoal|Shoals|Shore|Shores|Skyway|Spring|Springs|Spur|Spurs|Squares|Station|Sta|Stravenue|Stream|Streets|Summit|Terr|Throughway|Trace|Track|Trafficway|Tunnel|Turnpike|Underpass|Union|Unions|Valley|Valleys|Viaduct|Views|Village|Villages|Ville|Vista|Walks|Wall|Ways|Well|Wells";
const UNIT =
  "(?:,?[ ](?:Apt\\.?|Apartment|Suite|Ste\\.?|Unit|Flat|Fl\\.?|Floor|Room|#)[ ]?[\\w-]{1,6})";
const US_STATE =
  "A[LKZR]|C[AOT]|D[EC]|F[LM]|G[AU]|HI|I[ADLN]|K[SY]|LA|M[ADEHINOPST]|N[CDEHJMVY]|O[HKR]|P[AR]|RI|S[CD]|T[NX]|UT|V[AIT]|W[AIVY]";
const UK_POSTCODE = "[A-Z]{1,2}\\d[A-Z\\d]?[ ]?\\d[A-Z]{2}";
// One to three capitalised words, one space apart (no optional separator, so no ambiguity).
const CITY = `${W}(?:[ ]${W}){0,2}`;
const LINE_BREAK = "(?:,[ ]?|\\n[ \\t]*)";
const TAIL =
  `(?:${LINE_BREAK}${CITY},[ ]?(?:${US_STATE})[ ]\\d{5}(?:-\\d{4})?` +
  `|${LINE_BREAK}${CITY}(?:,[ ]?|\\n[ \\t]*|[ ])(?:${UK_POSTCODE})(?![\\w])` +
  `|(?:,[ ]?|[ ]|\\n[ \\t]*)(?:${UK_POSTCODE})(?![\\w]))?`;

// 1600 Harbor View Drive Apt 4B, Portland, OR 97201 (the city line is optional).
const US = new RegExp(
  `\\d{1,6}[ ](?:[NSEW]\\.?[ ])?(?:${W}[ ]){0,3}(?:${STREET_TYPES})\\.?(?![${LETTER}])${UNIT}?${TAIL}`,
  "y",
);
// Flat 3, 12 Priory Lane, then the same tail: the UK writes the flat first.
const UK_FLAT = new RegExp(
  `(?:Flat|Apartment|Unit)[ ]\\d{1,4}[A-Z]?,[ ]\\d{1,5}[ ](?:${W}[ ]){0,3}(?:${STREET_TYPES})\\.?(?![${LETTER}])${TAIL}`,
  "g",
);
// German, Nordic and Dutch streets end in a street word (Lindenstraße 12a, Storgatan 5); the
// scan looks for that ending and the house number, then reads the name back to its capital.
const STREET_SUFFIXES = [
  "straße",
  "strasse",
  "str.",
  "weg",
  "allee",
  "platz",
  "gasse",
  "ring",
  "damm",
  "ufer",
  "chaussee",
  "steig",
  "gatan",
  "vägen",
  "gränd",
  "torget",
  "stigen",
  "backen",
  "allén",
  "plan",
  "leden",
  "gata",
  "vej",
  "gade",
  "veien",
  "gaten",
  "laan",
  "straat",
  "plein",
  "gracht",
];
// A house number after a word: the street word is checked in code, which is much cheaper
// than an alternation of thirty endings tried at every position.
const DIGIT_RUN = /\d+/g;
const HOUSE_NUMBER = /\d{1,4}[a-zA-Z]?(?![\w])/y;
const STREET_PREFIX = new RegExp(
  `(?:Am|An der|Auf dem|Im|Zum|Zur)[ ]${W}[ ]\\d{1,4}[a-zA-Z]?(?![\\w])`,
  "g",
);
const STREET_PREFIX_GATE = /(?:Am|An der|Auf dem|Im|Zum|Zur) /;
// What may stand between the house number and the postcode: a Dutch or German addition
// (`hs`, `-1`, `bis`), a floor or a back building (`3. Etage`, `2. OG`, `Hinterhaus`), a flat
// (`lgh 1102`, `Whg. 4`).
const UNIT_BEFORE_POSTCODE =
  "(?:[ ](?:hs|huis|bis|ter|boven|I{1,3})(?![\\w])|-\\d{1,3}(?![\\w]))?" +
  "(?:,?[ ](?:\\d{1,2}\\.[ ]?(?:OG|Etage|Stock|Obergeschoss)|EG|DG|Hinterhaus|Vorderhaus|Seitenflügel|(?:lgh|Lgh|Whg\\.?|App\\.?|Apt\\.?)[ ]?\\d{1,5}))?";
const POSTCODE_TAIL = new RegExp(
  `${UNIT_BEFORE_POSTCODE}(?:,[ ]?|\\n[ \\t]*|[ ])(?:\\d{5}|\\d{3}[ ]\\d{2}|[1-9]\\d{3}(?:[ ]?[A-Z]{2}(?![\\w]))?)[ ]${W}(?:[ ](?:${W}|im|am|an|der|bei)){0,3}`,
  "y",
);
// 12 bis rue des Lilas, 69003 Lyon
const FR = new RegExp(
  `\\d{1,4}(?:[ ]?(?:bis|ter|quater|[A-D]))?,?[ ](?:rue|avenue|av\\.|boulevard|bd|impasse|place|chemin|allée|quai|route|cours|square|passage|voie|rond-point|faubourg)[ ](?:(?:des|du|de|de la|de l'|la|le|les|l'|d')[ ]?)?${W}(?:[ ]${W}){0,3}` +
    `${LINE_BREAK}\\d{5}[ ]${W}(?:[ -]${W}){0,3}(?:[ ]CEDEX(?:[ ]\\d{1,2})?)?`,
  "y",
);
// 〒160-0023 東京都新宿区西新宿1丁目2番3号; 大阪府大阪市北区梅田1-2-3
const JP =
  /(?:〒[ ]?\d{3}-\d{4}[ \u3000]*)?(?:東京都|北海道|京都府|大阪府|[\p{Script=Han}]{2,3}県)[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}ヶ]{1,12}?(?:市|区|郡|町|村)[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}ヶ\d\-−－ー丁目番地号の]{1,40}/gu;
const JP_POSTCODE_ONLY = /〒[ ]?\d{3}-\d{4}/g;
// PO boxes and military addresses: P.O. Box 186; PSC 5420, Box 2708\nAPO AA 33879
// Case variants are spelled out: a case-insensitive pattern that starts with a common letter
// is tried at nearly every position of ordinary text.
const PO_BOX =
  /(?:P\.?[ ]?O\.?[ ](?:Box|BOX)|PO[ ](?:Box|BOX)|Postfach|Postbus|Box|BOX|BP|B\.P\.|Apartado(?:[ ]de[ ]Correos)?|Casella[ ]Postale|C\.P\.|Skrytka[ ]pocztowa)[ ]\d{1,6}(?:[ ]\d{2}){0,2}(?:,?[ \n]*(?:APO|FPO|DPO)[ ](?:AA|AE|AP)[ ]\d{5}|(?:,[ ]?|\n)(?:\d{5}|\d{3}[ ]\d{2}|\d{2}-\d{3}|\d{4}(?:[ ]?[A-Z]{2})?)[ ][A-ZÀ-ÖØ-Þ\u0100-\u017f][\p{L}-]*(?:[ ][A-ZÀ-ÖØ-Þ\u0100-\u017f][\p{L}-]*){0,2}(?:[ ](?:Cedex|CEDEX)(?:[ ]\d{1,2})?)?)?/gu;
const MILITARY =
  /(?:PSC|Unit|UNIT|CMR)[ ]\d{3,5},?[ ](?:Box|BOX)[ ]\d{1,5}[ ,\n]+(?:APO|FPO|DPO)[ ](?:AA|AE|AP)[ ]\d{5}/g;

// The street word first, then the name, then the number: Spanish, Italian, Polish, Portuguese
// (`Calle de Alcalá 123, 4º B, 28009 Madrid`; `Via Roma, 16, int. 14, 40126 Bologna (BO)`;
// `ul. Długa 12/4 m. 5, 80-827 Gdańsk`). The postcode and town are required, and the postcode's
// shape is checked against the country the street word belongs to (STREET_FIRST_COUNTRY).
const CONNECTOR =
  "(?:de|del|de la|de los|de las|dei|degli|della|delle|dello|di|da|do|dos|das|e|y|i)";
const STREET_FIRST = new RegExp(
  `(?:Calle|C/|Avenida|Avda\\.|Paseo|Plaza|Camino|Carrer|Ronda|Travesía|Via|Viale|Corso|Piazza|Piazzale|Largo|Vicolo|Strada|ul\\.|al\\.|os\\.|pl\\.|Rua)[ ](?:${CONNECTOR}[ ])?${W}(?:[ ](?:${CONNECTOR}[ ])?(?:${W}|[IVX]{1,4})){0,5}?,?[ ]\\d{1,4}(?:[ ]?(?:bis|[A-Za-z])(?![\\w]))?(?:/[\\dA-Za-z]{1,4})?` +
    `(?:(?:,[ ]?|[ ])(?:int\\.[ ]?\\d{1,3}|scala[ ][A-Z\\d]|piano[ ]\\d{1,2}|\\d{1,2}[ºª°oa](?:[ ]?\\d{1,2}[ºª°oa])?(?:[ ](?:[A-Z]|izda\\.?|dcha\\.?|izq\\.?))?|bajo|ático|entresuelo|m\\.[ ]?\\d{1,4}|lok\\.[ ]?\\d{1,4})){0,2}` +
    `(?:,[ ]?|\\n[ \\t]*|[ ])(\\d{5}|\\d{2}-\\d{3}|\\d{4}-\\d{3})[ ]${W}(?:[ ](?:${W}|${CONNECTOR})){0,3}?(?:[ ]\\([A-Z]{2}\\)|[ ][A-Z]{2}(?![\\w])|[ ]\\((?:${W}[ ]?){1,2}\\))?(?=[\\s,.;:!?)]|$)`,
  "g",
);
/** Which postcodes a street word's country writes. */
function streetFirstPostcodeValid(match: string, postcode: string): boolean {
  if (/^(?:ul|al|os|pl)\./.test(match)) return /^\d{2}-\d{3}$/.test(postcode);
  if (match.startsWith("Rua ")) return /^\d{4}-\d{3}$/.test(postcode);
  if (!/^\d{5}$/.test(postcode)) return false;
  // Spain: the first two digits are a province, 01 to 52; Italy: 00010 to 98168.
  if (/^(?:Calle|C\/|Avenida|Avda|Paseo|Plaza|Camino|Carrer|Ronda|Travesía)/.test(match)) {
    const province = Number(postcode.slice(0, 2));
    return province >= 1 && province <= 52;
  }
  return Number(postcode) >= 10 && Number(postcode) <= 98168;
}
// A UK house with a name instead of a number: Rose Cottage, Chapel Road, Harrogate HG1 4QT.
const UK_HOUSE_WORDS = [
  "Cottage",
  "House",
  "Farm",
  "Lodge",
  "Barn",
  "Manor",
  "Rectory",
  "Hall",
  "Mill",
  "Villa",
];
const UK_NAMED_HOUSE = new RegExp(
  `(?:The[ ])?(?:${W}[ ]){0,2}(?:Cottage|House|Farm|Lodge|Barn|Manor|Rectory|Hall|Mill|Villa),[ ](?:${W}[ ]){0,3}(?:${STREET_TYPES})\\.?,[ ]${CITY},?[ ](?:${UK_POSTCODE})(?![\\w])`,
  "g",
);
// Japanese addresses in romaji, small to large: 4-2-17 Umeda, Kita-ku, Osaka 530-0001.
const JP_ROMAJI = new RegExp(
  `(?:Room[ ]\\d{1,4},[ ])?\\d{1,2}-\\d{1,3}-\\d{1,3}[ ]${W}(?:-${W})?(?:,[ ]${W}-(?:ku|shi|cho|machi|gun))?,[ ]${W},?[ ]\\d{3}-\\d{4}(?:,?[ ]Japan)?`,
  "g",
);
// Chinese addresses, large to small: 上海市浦东新区世纪大道148号25楼2250室, 邮编 after.
const ZH =
  /(?:(?:黑龙江|[\p{Script=Han}]{2})省|(?:内蒙古|广西壮族|西藏|宁夏回族|新疆维吾尔)自治区)?(?:石家庄|哈尔滨|呼和浩特|乌鲁木齐|[\p{Script=Han}]{2})市[\p{Script=Han}]{1,5}?(?:区|县|市)[\p{Script=Han}\d]{1,12}?(?:路|街|大道|道|巷|弄|胡同)\d{1,5}号(?:\d{1,3}(?:楼|层|栋|幢))?(?:\d{1,5}室)?(?:[ ]?邮编[ ]?[1-8]\d{5})?/gu;
// Korean road-name addresses: (06234) 서울특별시 강남구 테헤란로 123, 9층 124호.
const KO =
  /(?:\(\d{5}\)[ ]?)?(?:서울특별시|부산광역시|대구광역시|인천광역시|광주광역시|대전광역시|울산광역시|세종특별자치시|[가-힣]{2,4}도)[ ](?:[가-힣]{1,4}시[ ])?(?:[가-힣]{1,4}[구군][ ])?[가-힣\d]{1,12}(?:로|길)[ ]\d{1,5}(?:-\d{1,4})?(?:,[ ]?\d{1,3}층)?(?:[ ]?\d{1,5}호)?/gu;

// A flat or building written before the number, in French (Appartement 4, 18 rue …) and
// English (Apt 4B, 12 …): the address starts there.
const UNIT_FIRST =
  /(?:Appartement|Appt\.?|Bâtiment|Bât\.?|Résidence|Apartment|Apt\.?|Suite|Unit)[ ][\w-]{1,6},[ ]$/;

const NUMBER_FIRST: [RegExp, string][] = [
  [US, "street"],
  [FR, "fr"],
];

/** The language a rule belongs to, for the `languages` option; rules not listed belong to none. */
const RULE_LANGUAGE: Record<string, Language> = {
  street: "en",
  "uk-flat": "en",
  "uk-house": "en",
  military: "en",
  fr: "fr",
  "jp-romaji": "ja",
};
/** A street-first address's language, from its street word. */
function streetFirstLanguage(text: string, start: number, rule: string): Language | undefined {
  if (rule !== "street-first") return undefined;
  const head = text.slice(start, start + 12);
  if (/^(?:ul|al|os|pl)\./.test(head)) return "pl";
  if (/^(?:Via|Viale|Corso|Piazza|Piazzale|Largo|Vicolo|Strada)\b/.test(head)) return "it";
  if (/^Rua\b/.test(head)) return undefined;
  return "es";
}

const CAPITAL = new RegExp(`[${UPPER}]`);
const NAME_UNIT = new RegExp(`[${LETTER}-]`);
/** Whether a character can be part of a street or town name; ASCII without a regex. */
function isNameUnit(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  if (code < 128) return (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 45;
  return NAME_UNIT.test(text[index]!);
}

/** Whether the match at `index` starts a word. */
function startsWord(text: string, index: number): boolean {
  if (index === 0) return true;
  const code = text.charCodeAt(index - 1);
  return !(
    (code >= 48 && code <= 57) ||
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    code === 95 ||
    code === 45 ||
    (code > 127 && isNameUnit(text, index - 1))
  );
}

// Each letter-first pattern runs only when one of its words is in the text (indexOf is far
// cheaper than a regex scan of text that holds none of them).
// One regex test per gate: a list of words tested with includes() would scan the text once
// per word.
const GATES = new Map<RegExp, RegExp>();
const gate = (pattern: RegExp, words: readonly string[]) =>
  GATES.set(
    pattern,
    new RegExp(words.map((word) => word.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")).join("|")),
  );
const PATTERNS: [RegExp, string][] = [
  [STREET_FIRST, "street-first"],
  [UK_NAMED_HOUSE, "uk-house"],
  [JP_ROMAJI, "jp-romaji"],
  [UK_FLAT, "uk-flat"],
  [MILITARY, "military"],
  [PO_BOX, "po-box"],
];
gate(UK_FLAT, ["Flat ", "Apartment ", "Unit "]);
gate(MILITARY, ["PSC ", "Unit ", "UNIT ", "CMR "]);
gate(PO_BOX, [
  "Box ",
  "BOX ",
  "Postfach ",
  "Postbus ",
  "BP ",
  "B.P. ",
  "Apartado ",
  "Casella ",
  "C.P. ",
  "Skrytka ",
]);
gate(UK_NAMED_HOUSE, UK_HOUSE_WORDS);
gate(JP_ROMAJI, ["-ku,", "-shi,", "-cho,", "-machi,", "-gun,", "Japan"]);

const STREET_TYPE_SET = new Set(STREET_TYPES.split("|"));
const WORD_AHEAD = /[A-Z][A-Za-z]*/g;
/** Whether one of the six words after the number at `at` is a street suffix (`Drive`, `St.`). */
function streetWordAhead(text: string, at: number, digits: number): boolean {
  // "1600 Harbor…": a space and a capital right after the number, else no US address here.
  const after = at + digits;
  const capital = text.charCodeAt(after + 1);
  if (digits > 6 || text.charCodeAt(after) !== 32 || !(capital >= 65 && capital <= 90))
    return false;
  const window = text.slice(after, after + 72);
  WORD_AHEAD.lastIndex = 0;
  let count = 0;
  for (
    let word = WORD_AHEAD.exec(window);
    word !== null && count < 6;
    word = WORD_AHEAD.exec(window)
  ) {
    if (STREET_TYPE_SET.has(word[0])) return true;
    count++;
  }
  return false;
}

/** Whether the text has a digit: every Latin-script pattern needs a house or box number. */
const HAS_DIGIT = /\d/;
const HAS_JAPANESE = /[都道府県]/u;
const HAS_CJK_ADDRESS = /[市로길]/u;

/**
 * Finds street addresses in US, UK, German, French, Swedish (and Nordic and Dutch street
 * suffixes) and Japanese formats: a house number with a street word (`1600 Harbor View
 * Drive`, `Lindenstraße 12a`, `12 bis rue des Lilas`, `Storgatan 5`) and, when it follows, the
 * unit, city, state or postcode line (`Portland, OR 97201`, `SW1A 1AA`, `10115 Berlin`,
 * `111 22 Stockholm`); Japanese addresses from the prefecture to the block number (`東京都
 * 新宿区西新宿1丁目2番3号`, with its `〒160-0023`); PO boxes and APO/FPO addresses.
 */
export function addressDetector(): Detector {
  return {
    type: "ADDRESS",
    name: "address",
    priority: 25,
    maxLength: 160,
    find(text) {
      const matches: DetectorMatch[] = [];
      const push = (start: number, end: number, rule: string) => {
        while (end > start && /[ ,\n\t]/.test(text[end - 1]!)) end--;
        const language = RULE_LANGUAGE[rule] ?? streetFirstLanguage(text, start, rule);
        matches.push(
          language === undefined ? { start, end, rule } : { start, end, rule, language },
        );
      };
      if (HAS_DIGIT.test(text)) {
        for (const [pattern, rule] of PATTERNS) {
          const words = GATES.get(pattern);
          if (words !== undefined && !words.test(text)) continue;
          pattern.lastIndex = 0;
          for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
            if (!startsWord(text, match.index)) continue;
            if (pattern === STREET_FIRST && !streetFirstPostcodeValid(match[0], match[1]!))
              continue;
            push(match.index, match.index + match[0].length, rule);
          }
        }
        // Everything that starts with a number, from one scan of the digit runs.
        DIGIT_RUN.lastIndex = 0;
        for (let run = DIGIT_RUN.exec(text); run !== null; run = DIGIT_RUN.exec(text)) {
          const at = run.index;
          if (!startsWord(text, at)) continue;
          let found = false;
          for (const [pattern, rule] of NUMBER_FIRST) {
            // The US form needs a street word within the next few words: checked with a set
            // lookup before the pattern (an alternation of 200 suffixes) runs.
            if (pattern === US && !streetWordAhead(text, at, run[0].length)) continue;
            pattern.lastIndex = at;
            const match = pattern.exec(text);
            if (match !== null) {
              const unit = UNIT_FIRST.exec(text.slice(Math.max(0, at - 24), at));
              push(unit === null ? at : at - unit[0].length, at + match[0].length, rule);
              DIGIT_RUN.lastIndex = Math.max(DIGIT_RUN.lastIndex, at + match[0].length);
              found = true;
              break;
            }
          }
          if (found || text.charCodeAt(at - 1) !== 32) continue;
          HOUSE_NUMBER.lastIndex = at;
          const match = HOUSE_NUMBER.exec(text);
          if (match === null) continue;
          const wordEnd = at - 1;
          const floor = Math.max(0, wordEnd - 40);
          let wordStart = text[wordEnd - 1] === "." ? wordEnd - 1 : wordEnd;
          while (wordStart > floor && isNameUnit(text, wordStart - 1)) wordStart--;
          const word = text.slice(wordStart, wordEnd).toLowerCase();
          if (word.length < 3 || !STREET_SUFFIXES.some((suffix) => word.endsWith(suffix))) continue;
          // Back to the start of the compound ("Linden" of "Lindenstraße"), or to the word
          // before a separate "Straße" ("Berliner Straße").
          let start = wordStart;
          if (/^(?:stra(?:ß|ss)e|weg|allee|platz|gasse)$/.test(word) && text[start - 1] === " ") {
            let previous = start - 1;
            while (previous > floor && isNameUnit(text, previous - 1)) previous--;
            if (previous < start - 1 && CAPITAL.test(text[previous] ?? "")) start = previous;
          }
          if (!CAPITAL.test(text[start] ?? "") || !startsWord(text, start)) continue;
          const end = at + match[0].length;
          POSTCODE_TAIL.lastIndex = end;
          const tail = POSTCODE_TAIL.exec(text);
          if (tail !== null) {
            push(start, end + tail[0].length, "suffix-street");
            DIGIT_RUN.lastIndex = end + tail[0].length;
          }
        }
        if (STREET_PREFIX_GATE.test(text)) STREET_PREFIX.lastIndex = 0;
        else STREET_PREFIX.lastIndex = text.length;
        for (
          let match = STREET_PREFIX.exec(text);
          match !== null;
          match = STREET_PREFIX.exec(text)
        ) {
          if (!startsWord(text, match.index)) continue;
          const end = match.index + match[0].length;
          POSTCODE_TAIL.lastIndex = end;
          const tail = POSTCODE_TAIL.exec(text);
          if (tail !== null) push(match.index, end + tail[0].length, "prefix-street");
        }
      }
      if (HAS_CJK_ADDRESS.test(text)) {
        for (const [pattern, rule] of [
          [ZH, "zh"],
          [KO, "ko"],
        ] as const) {
          pattern.lastIndex = 0;
          for (let match = pattern.exec(text); match !== null; match = pattern.exec(text))
            matches.push({
              start: match.index,
              end: match.index + match[0].length,
              rule,
              language: rule,
            });
        }
      }
      if (HAS_JAPANESE.test(text) || text.includes("〒")) {
        JP.lastIndex = 0;
        for (let match = JP.exec(text); match !== null; match = JP.exec(text))
          matches.push({
            start: match.index,
            end: match.index + match[0].length,
            rule: "jp",
            language: "ja",
          });
        JP_POSTCODE_ONLY.lastIndex = 0;
        for (
          let match = JP_POSTCODE_ONLY.exec(text);
          match !== null;
          match = JP_POSTCODE_ONLY.exec(text)
        )
          matches.push({
            start: match.index,
            end: match.index + match[0].length,
            rule: "jp-postcode",
            language: "ja",
          });
      }
      return matches;
    },
  };
}
