// Cue words and small lists for the person detector, written for this package. The CJK and
// Korean surname lists are the most common family names of each language as widely published
// in national statistics (facts, not creative work); everything else is ordinary vocabulary.

/** Words that open a greeting; the name follows (`Hi Maya,`, `Dear Ms Brandt`). */
export const GREETINGS = new Set([
  "hi",
  "hello",
  "hey",
  "dear",
  "thanks",
  "thank",
  "cheers",
  "hallo",
  "liebe",
  "lieber",
  "bonjour",
  "cher",
  "chère",
  "hej",
  "hola",
  "estimado",
  "estimada",
  "ciao",
  "gentile",
  "olá",
  "beste",
  "geachte",
  "hoi",
  "cześć",
  "witam",
  "szanowny",
  "szanowna",
  "dzień dobry",
  "buongiorno",
  "salve",
  "buenos días",
  "estimados",
  "bonsoir",
  "salut",
  "kära",
  "sehr geehrte",
  "sehr geehrter",
  "guten tag",
  "moin",
  "servus",
  "привет",
  "здравствуйте",
  "уважаемый",
  "уважаемая",
]);

/** Honorifics before a name (`Ms Brandt`, `Dr. Okafor`). */
export const HONORIFICS = new Set([
  "mr",
  "mrs",
  "ms",
  "miss",
  "mx",
  "dr",
  "prof",
  "sir",
  "madam",
  "herr",
  "frau",
  "m",
  "mme",
  "mlle",
  "sr",
  "sra",
  "srta",
  "sig",
  "sig.ra",
  "fru",
]);

/** Words right before a name in running text (`spoke with`, `escalated by`, `cc`). */
export const NAME_VERBS = new Set([
  // Prepositions and conjunctions before a person in the other languages read.
  "an",
  "für",
  "mit",
  "und",
  "à",
  "pour",
  "avec",
  "et",
  "par",
  "a",
  "para",
  "con",
  "y",
  "e",
  "per",
  "naar",
  "aan",
  "voor",
  "met",
  "en",
  "till",
  "för",
  "med",
  "och",
  "av",
  "do",
  "dla",
  "z",
  "przez",
  "i",
  "oraz",
  "with",
  "by",
  "to",
  "from",
  "cc",
  "ask",
  "asked",
  "told",
  "tell",
  "called",
  "call",
  "contact",
  "contacted",
  "met",
  "meet",
  "emailed",
  "thanks",
  "and",
  "customer",
  "agent",
  "manager",
  "colleague",
  "client",
  "signed",
  "approved",
  "assigned",
  "reported",
  "requested",
  "is",
  "am",
  "named",
]);

/** Keys and labels whose value is a person's name (`Name:`, `"full_name":`, `氏名：`). */
export const NAME_KEYS =
  /^(?:name|names|full[\s_-]?name|fullname|first[\s_-]?name|firstname|last[\s_-]?name|lastname|given[\s_-]?name|family[\s_-]?name|surname|display[\s_-]?name|displayname|customer[\s_-]?name|customer|client|contact|contact[\s_-]?name|author|owner|assignee|reporter|requester|recipient|sender|signed[\s_-]?by|approver|attendee|passenger|patient|employee|user[\s_-]?name|account[\s_-]?holder|cardholder|card[\s_-]?holder|beneficiary|holder|to|from|cc|bcc|reply-to|nom|prénom|kunde|kundin|ansprechpartner|namn|kund|nombre|cliente|nome|имя|фио|клиент|контакт|получатель|氏名|名前|お名前|お客様|顧客|担当者|担当|姓名|联系人|客户|收件人|发件人|抄送|差出人|宛先|送信者|名|姓|이름|성|고객|성명|보낸[\s]?사람|받는[\s]?사람|참조|vorname|nachname|familienname|von|an|prenom|nom[\s_-]de[\s_-]famille|de|à|a|para|apellidos?|nombre[\s_-]completo|da|cognome|nome[\s_-]completo|voornaam|achternaam|van|aan|förnamn|fornamn|efternamn|från|till|kopia|imię|imie|nazwisko|od|do|dw|الاسم|العميل|שם|नाम|όνομα|πελάτης)$/i;

/** Lines that close a letter (lower case, without the comma); the signature is on the next line. */
export const CLOSINGS = new Set([
  "kind regards",
  "best regards",
  "warm regards",
  "regards",
  "best wishes",
  "best",
  "thanks",
  "thank you",
  "many thanks",
  "cheers",
  "sincerely",
  "yours sincerely",
  "yours truly",
  "yours",
  "all the best",
  "take care",
  "mit freundlichen grüßen",
  "viele grüße",
  "liebe grüße",
  "grüße",
  "cordialement",
  "bien à vous",
  "amitiés",
  "med vänliga hälsningar",
  "vänliga hälsningar",
  "hälsningar",
  "saludos",
  "atentamente",
  "un saluto",
  "cordiali saluti",
  "met vriendelijke groet",
  "met vriendelijke groeten",
  "vriendelijke groet",
  "groeten",
  "hartelijke groet",
  "pozdrawiam",
  "z poważaniem",
  "pozdrowienia",
  "un saludo",
  "un cordial saludo",
  "saludos cordiales",
  "distinti saluti",
  "saluti",
  "bien cordialement",
  "salutations",
  "freundliche grüße",
  "beste grüße",
  "mvh",
  "с уважением",
  "此致",
  "担当",
  "敬具",
  "よろしくお願いします",
  "此致敬礼",
  "감사합니다",
]);

/** Headers of a list of people: the items below are names (`Attendees:`). */
export const PEOPLE_HEADERS =
  /(?:attendees|participants|people|members|team members|contacts|invitees|guests|recipients|owners|assignees|reviewers|approvers|speakers|signatories|teilnehmer|participants|deltagare|asistentes|участники)\s*:?\s*$/i;

/**
 * Capitalised words that are not names, though they start with a capital: common words of
 * UI, commerce, places and time. A candidate made only of these is not a name.
 */
export const NOT_NAME_WORDS = new Set(
  `a an the this that these those my your our their his her its all any each every some no
  i we you he she they it me us them
  customer customers team teams support service services success status order orders plan plans
  premium standard basic pro enterprise free cloud platform account accounts billing invoice
  shipping delivery return returns refund refunds product products item items page pages home
  settings profile admin user users guest guests new old next last first main general public
  private release releases notes note update updates version build beta alpha report reports
  monday tuesday wednesday thursday friday saturday sunday january february march april may
  june july august september october november december today tomorrow yesterday morning
  evening night week month year spring summer autumn winter
  north south east west northern southern eastern western central upper lower
  new london paris berlin tokyo united states kingdom america europe asia africa
  street road avenue lane drive court boulevard way place square park hill valley farms farm
  city town county state region district center centre office offices building floor room
  inc ltd llc gmbh corp co company group bank holdings partners labs studio studios systems
  black green white blue red orange yellow gold silver grey gray
  mr mrs ms dr sir madam dear hi hello hey thanks thank regards best kind warm
  please yes no ok okay sorry welcome good great happy
  api sdk cli app apps web mobile desktop server client email mail phone chat call
  meeting review agenda minutes subject re fwd fw
  kernel gateway agent firmware browser
  management manager engineering sales marketing finance legal operations hr it qa
  open closed pending active inactive done failed error warning info debug
  total amount price cost tax fee fees discount`.split(/\s+/),
);

/** The most common family names in Chinese (simplified and traditional), Japanese and Korean. */
export const CJK_SURNAMES = new Set(
  `王 李 张 張 刘 劉 陈 陳 杨 楊 黄 黃 赵 趙 吴 吳 周 徐 孙 孫 马 馬 朱 胡 郭 何 高 林 罗 羅 郑 鄭 梁
  谢 謝 宋 唐 许 許 韩 韓 冯 馮 邓 鄧 曹 彭 曾 肖 田 董 袁 潘 于 蒋 蔣 蔡 余 杜 叶 葉 程 苏 蘇 魏 吕 呂
  丁 任 沈 姚 卢 盧 姜 崔 钟 鍾 谭 譚 陆 陸 汪 范 金 石 廖 贾 賈 夏 韦 付 方 白 邹 孟 熊 秦 邱 江 尹
  薛 闫 段 雷 侯 龙 龍 史 陶 黎 贺 顾 毛 郝 龚 邵 万 钱 錢 严 嚴 武 戴 莫 孔 向 汤 欧阳 司马 诸葛
  佐藤 鈴木 高橋 田中 伊藤 渡辺 渡邊 山本 中村 小林 加藤 吉田 山田 佐々木 山口 松本 井上 木村 斎藤
  清水 山崎 森 池田 橋本 阿部 石川 山下 中島 石井 小川 前田 岡田 長谷川 藤田 後藤 近藤 村上 遠藤
  青木 坂本 斉藤 福田 太田 西村 藤井 岡本 松田 中川 中野 原田 小野 竹内 金子 和田 中山 藤原
  김 이 박 최 정 강 조 윤 장 임 한 오 서 신 권 황 안 송 류 전 홍 고 문 양 손 배 백 허 유 남 심 노
  하 곽 성 차 주 우 구 민 진 나 지 엄 채 원 천 방 공 현 함 변 염 여 추 도 소 석 선 설 마 길 연 위 표 명 기 반 왕 금 옥 육 인 맹 제 모 탁 국`
    .split(/\s+/)
    .filter((name) => name.length > 0),
);
