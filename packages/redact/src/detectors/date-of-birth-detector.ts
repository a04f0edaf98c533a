import { keyBefore } from "../context.js";
import type { Detector, DetectorMatch } from "../detector.js";

const MONTH_NAMES =
  "jan(?:uary|\\.)?|feb(?:ruary|\\.)?|mar(?:ch|\\.)?|apr(?:il|\\.)?|may|june?|july?|aug(?:ust|\\.)?|sep(?:t(?:ember)?|\\.)?|oct(?:ober|\\.)?|nov(?:ember|\\.)?|dec(?:ember|\\.)?" +
  "|januar|februar|märz|mai|juni|juli|oktober|dezember" +
  "|janvier|février|mars|avril|juin|juillet|août|septembre|octobre|novembre|décembre" +
  "|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre" +
  "|januari|februari|mars|maj|augusti|oktober" +
  "|gennaio|febbraio|aprile|maggio|giugno|luglio|settembre|ottobre|dicembre" +
  "|maart|mei|augustus" +
  "|stycznia|lutego|marca|kwietnia|maja|czerwca|lipca|sierpnia|września|października|listopada|grudnia";
// A date in the common written forms: ISO, day/month/year with / . -, "12 March 1980",
// "March 12, 1980", "12. März 1980", and 1980年5月12日.
const DATE = new RegExp(
  "(?:" +
    "(?:19|20)\\d\\d[-/.](?:0?[1-9]|1[0-2])[-/.](?:0?[1-9]|[12]\\d|3[01])" +
    "|(?:0?[1-9]|[12]\\d|3[01])[/.-](?:0?[1-9]|[12]\\d|3[01])[/.-](?:19|20)?\\d\\d" +
    `|(?:0?[1-9]|[12]\\d|3[01])(?:st|nd|rd|th)?\\.?[ ](?:${MONTH_NAMES})\\.?,?[ ](?:19|20)\\d\\d` +
    `|(?:${MONTH_NAMES})\\.?[ ](?:0?[1-9]|[12]\\d|3[01])(?:st|nd|rd|th)?,?[ ](?:19|20)\\d\\d` +
    `|(?:0?[1-9]|[12]\\d|3[01])[ ]de[ ](?:${MONTH_NAMES})[ ]de(?:l)?[ ](?:19|20)\\d\\d` +
    `|(?:${MONTH_NAMES})[ ](?:of[ ])?(?:19|20)\\d\\d` +
    ")(?![\\w/]|\\.\\d)" +
    "|(?:19|20)\\d\\d年(?:0?[1-9]|1[0-2])月(?:0?[1-9]|[12]\\d|3[01])日" +
    "|(?:19|20)\\d\\d년[ ]?(?:0?[1-9]|1[0-2])월[ ]?(?:0?[1-9]|[12]\\d|3[01])일",
  "gi",
);
// Every date has a year (or a two-digit one after day and month): the scan looks for those,
// which are rare in prose, and reads the date and its cue around each.
const YEAR = /(?:19|20)\d\d(?!\d)|\d[/.-]\d\d(?!\d)/g;
const DATE_WINDOW = 32;
// Words that mark a date as a birth date, in the window before it (after the previous date).
const BIRTH_WORDS =
  /(?:\bborn\b|\bdob\b|\bd\.o\.b\b|date of birth|birth ?date|\bbirthday\b|\bbday\b|geboren|geburtsdatum|geburtstag|\bgeb\.|\bnée?(?=[\s:,]|$)|\bné\(e\)|date de naissance|naissance|födelsedatum|födelsedag|\bfödd\b|fecha de nacimiento|\bf\. ?nac\.|nacimiento|\bnacid[oa]\b|\bnaci[óo]\b|data di nascita|\bnat[oa]\b|geboortedatum|geboren op|urodzon[ya]|urodził[ao]?|data urodzenia|\bur\.|дата рождения|родил(?:ся|ась)|生年月日|誕生日|出生日期|出生于|出生|生日|생년월일|출생일|출생|생일|生まれ|تاريخ الميلاد)/i;
// A short cue right before the date: "b. 1984-03-12", "f. 12 mars 1984", "* 12. Mai 1972".
const CUE_RIGHT_BEFORE = /(?:^|[\s(])(?:b\.|f\.|\*)[ ]?$/i;
const SHORT_CUE = /(?:^|[\s(])(?:b\.|f\.|\*)[ ]?[\dA-Za-z]/;
// A cue right after the date: 1984年3月12日生まれ, 1984年3月12日出生, 1984년 3월 12일 출생.
const CUE_RIGHT_AFTER = /^[ ]?(?:生まれ|生|出生|출생|태생)/u;
const BIRTH_KEY_HINT =
  /dob|birth|born|bday|naissance|nacimiento|nascita|geboorte|geburt|f[oö]delse|urodzenia|生年月日|出生|생년월일/i;
const BIRTH_KEYS =
  /(?:^|[^a-z])(?:dob|birth|birthday|birthdate|date_of_birth|date-of-birth|born|born_on|date_naissance|date_de_naissance|fecha_nacimiento|fecha_de_nacimiento|data_nascita|data_di_nascita|geboortedatum|geburtsdatum|fodelsedatum|födelsedatum|data_urodzenia|生年月日|出生日期|생년월일)$/;
// Words that give the date another meaning, when they come after the birth word.
const OTHER_EVENT =
  /(?:since|opened|joined|created|updated|shipped|delivered|dispatched|arrived|ordered|paid|due|renews?|expires?|issued|registered|signed|member|geliefert|lieferung|versandt|bestellt|livr[ée]|exp[ée]di|command[ée]|entreg[óo]|enviad[oa]|pedid[oa]|consegnat|spedit|ordinat|bezorgd|geleverd|verzonden|levererades|skickades|beställd|doręczon|wysłan|zamówion|配達|発送|送达|发货|배송|도착)/i;

/**
 * Finds dates of birth: a date (ISO, numeric with `/`, `.` or `-`, written out in English,
 * German, French, Spanish or Swedish, or 1980年5月12日) with a birth word before it in the same
 * clause (`born`, `DOB`, `date of birth`, `birthday`, `geboren`, `né`, `生年月日`…) or under a
 * key such as `dob` or `date_of_birth`. Other dates (`shipped on`, `member since`) are kept.
 */
export function dateOfBirthDetector(): Detector {
  return {
    type: "DATE_OF_BIRTH",
    name: "date-of-birth",
    priority: 26,
    maxLength: 40,
    find(text) {
      const matches: DetectorMatch[] = [];
      let previousEnd = 0;
      let scannedTo = 0;
      YEAR.lastIndex = 0;
      for (let year = YEAR.exec(text); year !== null; year = YEAR.exec(text)) {
        const yearEnd = year.index + year[0].length;
        const from = Math.max(scannedTo, year.index - DATE_WINDOW);
        // A cue must stand within the 64 characters before the year.
        const near = text.slice(Math.max(0, year.index - 64), yearEnd + 12);
        const key = BIRTH_KEY_HINT.test(near);
        if (!key && !BIRTH_WORDS.test(near) && !SHORT_CUE.test(near)) continue;
        // The dates around this year, read in a window (a date is at most a few characters
        // longer than its year): a scan of the whole text from here would make a text full of
        // cues and years quadratic.
        const window = text.slice(from, yearEnd + 16);
        DATE.lastIndex = 0;
        for (
          let match = DATE.exec(window);
          match !== null && from + match.index < yearEnd;
          match = DATE.exec(window)
        ) {
          const start = from + match.index;
          const end = start + match[0].length;
          scannedTo = end;
          if (end < year.index) continue;
          const before = text.charCodeAt(start - 1);
          // Not inside a longer number or word ("v2.1.1990", "x12/03/1985").
          if (
            (before >= 48 && before <= 57) ||
            (before >= 65 && before <= 90) ||
            (before >= 97 && before <= 122) ||
            before === 47 ||
            before === 46 ||
            before === 45 ||
            before === 95
          )
            continue;
          const dateKey = keyBefore(text, start);
          let birth = dateKey !== undefined && BIRTH_KEYS.test(dateKey.replace(/\s+/g, "_"));
          if (!birth) {
            birth =
              CUE_RIGHT_BEFORE.test(text.slice(Math.max(0, start - 4), start)) ||
              CUE_RIGHT_AFTER.test(text.slice(end, end + 4));
          }
          if (!birth) {
            // The clause before the date: from the previous date or the last , ; or line break.
            let window = text.slice(Math.max(previousEnd, start - 48), start);
            const cut = Math.max(
              window.lastIndexOf(";"),
              window.lastIndexOf("\n", window.length - 2),
              window.lastIndexOf(", "),
            );
            if (cut !== -1) window = window.slice(cut + 1);
            const cue = BIRTH_WORDS.exec(window);
            birth = cue !== null && !OTHER_EVENT.test(window.slice(cue.index + cue[0].length));
          }
          if (birth) matches.push({ start, end });
          previousEnd = end;
        }
        if (YEAR.lastIndex < scannedTo) YEAR.lastIndex = scannedTo;
      }
      return matches;
    },
  };
}
