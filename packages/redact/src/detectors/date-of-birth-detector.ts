import { keyBefore } from "../context.js";
import type { Detector, DetectorMatch } from "../detector.js";

const MONTH_NAMES =
  "jan(?:uary|\\.)?|feb(?:ruary|\\.)?|mar(?:ch|\\.)?|apr(?:il|\\.)?|may|june?|july?|aug(?:ust|\\.)?|sep(?:t(?:ember)?|\\.)?|oct(?:ober|\\.)?|nov(?:ember|\\.)?|dec(?:ember|\\.)?" +
  "|januar|februar|märz|mai|juni|juli|oktober|dezember" +
  "|janvier|février|mars|avril|juin|juillet|août|septembre|octobre|novembre|décembre" +
  "|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre" +
  "|januari|februari|mars|maj|augusti|oktober";
// A date in the common written forms: ISO, day/month/year with / . -, "12 March 1980",
// "March 12, 1980", "12. März 1980", and 1980年5月12日.
const DATE = new RegExp(
  "(?:" +
    "(?:19|20)\\d\\d[-/.](?:0?[1-9]|1[0-2])[-/.](?:0?[1-9]|[12]\\d|3[01])" +
    "|(?:0?[1-9]|[12]\\d|3[01])[/.-](?:0?[1-9]|[12]\\d|3[01])[/.-](?:19|20)?\\d\\d" +
    `|(?:0?[1-9]|[12]\\d|3[01])(?:st|nd|rd|th)?\\.?[ ](?:${MONTH_NAMES})\\.?,?[ ](?:19|20)\\d\\d` +
    `|(?:${MONTH_NAMES})\\.?[ ](?:0?[1-9]|[12]\\d|3[01])(?:st|nd|rd|th)?,?[ ](?:19|20)\\d\\d` +
    ")(?![\\w/]|\\.\\d)" +
    "|(?:19|20)\\d\\d年(?:0?[1-9]|1[0-2])月(?:0?[1-9]|[12]\\d|3[01])日",
  "gi",
);
// Every date has a year (or a two-digit one after day and month): the scan looks for those,
// which are rare in prose, and reads the date and its cue around each.
const YEAR = /(?:19|20)\d\d(?!\d)|\d[/.-]\d\d(?!\d)/g;
const DATE_WINDOW = 32;
// Words that mark a date as a birth date, in the window before it (after the previous date).
const BIRTH_WORDS =
  /(?:\bborn\b|\bdob\b|\bd\.o\.b\b|date of birth|birth ?date|\bbirthday\b|\bbday\b|geboren|geburtsdatum|geb\.|\bné\b|\bnée\b|date de naissance|födelsedatum|\bfödd\b|fecha de nacimiento|nacid[oa]|data di nascita|nato|nata|дата рождения|родил(?:ся|ась)|生年月日|出生日期|生日|생년월일|تاريخ الميلاد)/i;
const BIRTH_KEY_HINT = /dob|birth|born|bday/i;
const BIRTH_KEYS =
  /(?:^|[^a-z])(?:dob|birth|birthday|birthdate|date_of_birth|date-of-birth|born|born_on)$/;
// Words that give the date another meaning, when they come after the birth word.
const OTHER_EVENT =
  /(?:since|opened|joined|created|updated|shipped|delivered|ordered|paid|due|renews?|expires?|issued|registered|signed|member)/i;

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
        const near = text.slice(Math.max(0, year.index - 64), year.index);
        const key = BIRTH_KEY_HINT.test(near);
        if (!key && !BIRTH_WORDS.test(near)) continue;
        DATE.lastIndex = from;
        for (
          let match = DATE.exec(text);
          match !== null && match.index < yearEnd;
          match = DATE.exec(text)
        ) {
          const start = match.index;
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
