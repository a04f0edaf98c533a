/**
 * The named rules of the heuristic scanner. Every pattern runs on normalised text (lower case,
 * NFKC, Latin accents dropped, whitespace collapsed to one space or one line break), so the
 * sources are written in lower case without accents.
 *
 * Every quantifier is bounded and no unbounded group nests another, so each pattern runs in
 * time linear in the text (times a small constant): a test feeds each one adversarial input.
 */

import type { RuleAnchor } from "./rule-prefilter.js";

/** Which view of the text a rule reads. */
export type RuleView =
  /** Normalised text with its markup kept (tags, brackets, quotes): structure and spoofing rules. */
  | "raw"
  /** Normalised text with markup replaced by spaces: phrase rules. */
  | "phrase";

/** One named rule of the heuristic scanner. */
export interface HeuristicRule {
  /** A stable snake_case name, reported in findings. */
  readonly name: string;
  /** Weight in [0, 1]; the score combines the weights of distinct rules that fired. */
  readonly weight: number;
  readonly view: RuleView;
  /** Must carry the `g` flag. */
  readonly pattern: RegExp;
  /** A short human description. */
  readonly detail: string;
  /** Whether the rule is also tried on ROT13-decoded text (English phrase rules only). */
  readonly rot13?: boolean;
  /**
   * Conditions every match satisfies, all of which must hold for the rule to run: each names
   * word prefixes, characters, scripts or substrings, one of which occurs in the normalised
   * text. A rule without anchors runs on every text. Wrong anchors make the rule miss, so
   * `heuristicScanner({ prefilter: false })` runs every rule regardless, to check them.
   */
  readonly anchors?: readonly RuleAnchor[];
  /**
   * Lower-case word prefixes (letters or digits, one or more), one of which begins every match,
   * at a word start of the normalised text. When given, the scanner tries the pattern only where
   * these words start, instead of scanning the whole text. Checked like `anchors`.
   */
  readonly starts?: readonly string[];
}

/** An anchor made of word prefixes. */
function words(...list: string[]): RuleAnchor {
  return { words: list };
}

/** Builds a phrase pattern: a space in the source matches one space or one line break. */
function phrase(source: string): RegExp {
  return new RegExp(source.replaceAll(" ", "[ \\n]"), "g");
}

const overrideVerbs =
  "(?:ignore|ignoring|ignored|disregard|disregarding|forget|forgetting|override|overriding|overrule|bypass|bypassing|skip|neglect|dismiss|abandon|discard|nevermind|never mind|stop following|do not follow|don't follow|dont follow|no longer follow|stop obeying|do not obey|don't obey)";
const filler =
  "(?:(?:all|any|every|each|of|the|your|my|our|these|those|this|that|above|prior|previous|preceding|earlier|foregoing|former|old|older|original|initial|existing|current|other|and|following|system|given|provided|evidence|information|info|text|context|s|'s) ){0,6}";
const instructionNouns =
  "(?:instructions?|iunstructions?|instrcutions?|instuctions?|directions?|directives?|prompts?|prompting|rules?|guidelines?|guidance|commands?|programming|training|constraints?|restrictions?|polic(?:y|ies)|system prompt|system message)";
const priorWords =
  "(?:previous|prior|above|preceding|earlier|foregoing|initial|original|old|former|existing)";
const aiNouns =
  "(?:ai|a\\.i\\.|assistant|ai assistant|chatbot|chat bot|chat assistant|llm|large language model|language model|ai language model|ai model|ai agent|gpt-?[0-9.]{0,4}|chatgpt|claude|gemini|llama|command r\\+?|copilot|agent)";
/** What may stand before an imperative verb: a sentence start, or "please", "and", "then", ... */
const imperativeBefore =
  "(?:^|[.!?:;\\n] ?|\\b(?:please|and|then|also|first|now|just|immediately|todo|kindly|must|should) )";
/**
 * Placed right after an imperative verb: looks back over the verb to check what stands before
 * it (checking after the verb matched keeps the scan fast: the lookbehind runs only on verbs).
 */
const imperative = `(?<=${imperativeBefore}[a-z-]{2,12})`;
/** Prefixes of the override verbs ("ignor" covers ignore, ignoring, ignored). */
const overrideVerbPrefixes = [
  "ignor",
  "disregard",
  "forget",
  "overrid",
  "overrule",
  "bypass",
  "skip",
  "neglect",
  "dismiss",
  "abandon",
  "discard",
  "never",
];
/** Anchors of the override verbs: a word of each alternative ("follow" in "do not follow"). */
const verbs = words(...overrideVerbPrefixes, "follow", "obey");
/** Where an override phrase can start ("stop" in "stop following", "do" in "don't follow"). */
const overrideStarts = [...overrideVerbPrefixes, "stop", "do", "no"];
const instructionWords = [
  "instruction",
  "iunstruction",
  "instrcution",
  "instuction",
  "direction",
  "directive",
  "prompt",
  "rule",
  "guideline",
  "guidance",
  "command",
  "programming",
  "training",
  "constraint",
  "restriction",
  "polic",
];
const priorList = [
  "previous",
  "prior",
  "above",
  "preceding",
  "earlier",
  "foregoing",
  "initial",
  "original",
  "old",
  "former",
  "existing",
];
const exfiltrationVerbs = [
  "send",
  "forward",
  "email",
  "mail",
  "transfer",
  "upload",
  "post",
  "share",
  "leak",
  "exfiltrate",
  "copy",
  "relay",
  "deliver",
  "submit",
  "bcc",
  "give",
  "tell",
  "provide",
  "include",
  "disclose",
  "reveal",
];
const leakVerbs = [
  "reveal",
  "repeat",
  "print",
  "show",
  "tell",
  "output",
  "list",
  "relay",
  "give",
  "share",
  "display",
  "write",
  "recite",
  "dump",
  "leak",
  "spell",
  "provide",
  "send",
  "copy",
  "return",
];
const automatedNouns =
  "(?:software|systems?|agents?|tools?|readers?|screeners?|scanners?|reviewers?|parsers?|assistants?)";

/** The default rules, in the order they are tried. */
export const defaultRules: readonly HeuristicRule[] = [
  // --- Overriding instructions -------------------------------------------------------------
  {
    name: "override_instructions",
    weight: 0.85,
    view: "phrase",
    rot13: true,
    detail: "tells the reader to ignore or forget its instructions",
    starts: overrideStarts,
    anchors: [verbs, words(...instructionWords, "system")],
    pattern: phrase(`\\b${overrideVerbs} ${filler}${instructionNouns}\\b`),
  },
  {
    name: "override_instructions",
    weight: 0.8,
    view: "phrase",
    rot13: true,
    detail: "tells the reader to ignore what came before",
    starts: overrideStarts,
    anchors: [verbs, words("above", "before", "previously", "said", "told", "else", "earlier")],
    pattern: phrase(
      `\\b${overrideVerbs} (?:(?:all|any|of|the|your|my|everything|that|what|i|you|we|'ve|have|has|been|was|were|said|told|written|else|previously) ){0,5}(?:above|before|previously said|said before|said|told you|else|earlier)\\b`,
    ),
  },
  {
    name: "override_instructions",
    weight: 0.6,
    view: "phrase",
    rot13: true,
    detail: "tells the reader to ignore something that came earlier",
    starts: overrideStarts,
    anchors: [verbs, words(...priorList)],
    pattern: phrase(
      `\\b${overrideVerbs} (?:(?:all|any|of|the|your|my) ){0,3}${priorWords} [a-z]{3,20}\\b`,
    ),
  },
  {
    name: "override_instructions",
    weight: 0.8,
    view: "phrase",
    rot13: true,
    detail: "tells the reader to disregard everything but what follows",
    starts: ["ignore", "disregard", "forget"],
    anchors: [words("ignore", "disregard", "forget")],
    pattern: phrase(
      `\\b(?:ignore|disregard|forget) (?:(?:all|any|every|other) ){1,2}(?:info|information|text|content|data|documents?|snippets?|context|evidence|results?)(?: [a-z]{2,12}){0,2} (?:except|but|other than|apart from|besides|and)\\b`,
    ),
  },
  {
    name: "override_instructions",
    weight: 0.6,
    view: "phrase",
    detail: "tells the reader to ignore them and do something else",
    starts: ["ignore", "disregard", "forget"],
    anchors: [words("ignore", "disregard", "forget")],
    pattern: phrase(
      `\\b(?:ignore|disregard|forget) (?:them|it|this|these|those|that|everything)(?: all)? and (?:instead|just|only|focus|do|tell|print|say|output|follow)\\b`,
    ),
  },
  {
    name: "override_instructions",
    weight: 0.8,
    view: "phrase",
    rot13: true,
    detail: "declares earlier instructions void",
    starts: ["all", ...priorList],
    anchors: [
      words("all", ...priorList),
      words("are", "were", "is", "have", "has"),
      words(
        "false",
        "void",
        "invalid",
        "cancel",
        "revoked",
        "obsolete",
        "out",
        "wrong",
        "fake",
        "null",
        "no",
        "replaced",
        "superseded",
        "overridden",
        "lifted",
      ),
    ],
    pattern: phrase(
      `\\b(?:all ?)?${priorWords} ?(?:instructions?|directions|rules|prompts?|guidelines) (?:are|were|is|have been|has been) (?:now )?(?:false|void|invalid|cancell?ed|revoked|obsolete|out of date|outdated|wrong|fake|null|no longer valid|replaced|superseded|overridden|lifted)\\b`,
    ),
  },
  {
    name: "override_instructions",
    weight: 0.6,
    view: "phrase",
    detail: "marks the end of earlier instructions",
    starts: ["end"],
    anchors: [words("end"), words("instructions", "system", "prompt")],
    pattern: phrase(
      `\\bend (?:of )?(?:the )?(?:out of date |outdated |old |previous |original |system )?(?:instructions|system prompt|prompt)\\b`,
    ),
  },
  {
    name: "override_instructions",
    weight: 0.5,
    view: "phrase",
    detail: "tells the reader to ignore what the document says",
    starts: ["ignore", "disregard"],
    anchors: [words("ignore", "disregard")],
    pattern: phrase(
      `\\b(?:ignore|disregard) (?:all|any|every) (?:[a-z]{2,20} ){0,2}(?:indicators|information|evidence|data|details|facts|signals|feedback|concerns|warnings|red flags|content) (?:in|from|of|about) (?:the|this) (?:text|document|resume|cv|content|email|page|file|profile)\\b`,
    ),
  },
  // Other languages: the basic override phrases.
  {
    name: "override_instructions",
    weight: 0.85,
    view: "phrase",
    detail: "override phrase (es/pt)",
    starts: ["ignor", "olvid", "descarta", "omite", "esquec", "desconsider"],
    anchors: [words("ignor", "olvid", "descarta", "omite", "esquec", "desconsider")],
    pattern: phrase(
      `\\b(?:ignora|ignore|ignorar|ignoren|ignorem|olvida|olvide|olvidar|olviden|descarta|omite|esqueca|esquecam|esquecer|desconsidere|desconsiderar|desconsidera) (?:(?:todas|todos|todo|cualquier|quaisquer|las|los|as|os|tus|sus|suas|tuas|mis|minhas|de|da|das|do|dos) ){0,3}(?:instrucciones|instruccion|indicaciones|ordenes|reglas|directrices|instrucoes|instrucao|orientacoes|regras|diretrizes|ordens)\\b`,
    ),
  },
  {
    name: "override_instructions",
    weight: 0.85,
    view: "phrase",
    detail: "override phrase (fr)",
    starts: ["ignore", "oublie", "ne", "fais"],
    anchors: [words("ignore", "oublie", "tenez", "tiens", "abstraction")],
    pattern: phrase(
      `\\b(?:ignore[rz]?|oublie[rz]?|ne tenez pas compte|ne tiens pas compte|fais abstraction) (?:(?:de|des|du|toutes|tous|les|vos|tes|ces|d'|l') ?){0,3}(?:instructions|consignes|directives|regles|ordres|indications)\\b`,
    ),
  },
  {
    name: "override_instructions",
    weight: 0.85,
    view: "phrase",
    detail: "override phrase (de)",
    starts: ["ignorier", "vergiss", "vergess", "missacht"],
    anchors: [
      words("ignorier", "vergiss", "vergess", "missacht"),
      words(
        "anweisungen",
        "instruktionen",
        "befehle",
        "regeln",
        "vorgaben",
        "richtlinien",
        "anordnungen",
      ),
    ],
    pattern: phrase(
      `\\b(?:ignoriere|ignorieren sie|ignoriert|ignorier|vergiss|vergessen sie|vergesst|missachte|missachten sie) (?:(?:alle|die|deine|ihre|eure|vorherigen|bisherigen|obigen|vorigen|fruheren|vorangegangenen|bisherige|vorherige|alten) ){0,3}(?:anweisungen|instruktionen|befehle|regeln|vorgaben|richtlinien|anordnungen)\\b`,
    ),
  },
  {
    name: "override_instructions",
    weight: 0.85,
    view: "phrase",
    detail: "override phrase (it)",
    starts: ["ignora", "dimentic", "tralascia", "trascura"],
    anchors: [
      words("ignora", "dimentic", "tralascia", "trascura"),
      words("istruzioni", "indicazioni", "regole", "direttive", "ordini"),
    ],
    pattern: phrase(
      `\\b(?:ignora|ignorate|ignorare|dimentica|dimenticate|dimenticare|tralascia|trascura) (?:(?:tutte|tutti|le|i|gli|tue|sue|vostre|precedenti|queste) ){0,3}(?:istruzioni|indicazioni|regole|direttive|ordini)\\b`,
    ),
  },
  {
    name: "override_instructions",
    weight: 0.85,
    view: "phrase",
    detail: "override phrase (ru)",
    anchors: [{ scripts: ["cyrillic"] }],
    pattern: phrase(
      `(?:игнорируй|игнорируйте|игнорировать|проигнорируй|проигнорируйте|забудь|забудьте|не обращай внимания на|не обращайте внимания на|отмени|отмените) (?:(?:все|всё|предыдущие|прежние|прошлые|старые|вышеуказанные|вышеприведенные|твои|ваши|свои|эти|на) ){0,3}(?:инструкции|указания|команды|правила|инструкций|указаний|распоряжения)`,
    ),
  },
  {
    name: "override_instructions",
    weight: 0.85,
    view: "phrase",
    detail: "override phrase (zh)",
    anchors: [{ scripts: ["cjk"] }],
    pattern:
      /(?:忽略|无视|忽视|不要理会|不要理睬|忘记|忘掉|無視|忘記|忽視|不理会)[^\n]{0,10}(?:指令|指示|说明|說明|提示词|提示詞|命令|规则|規則|设定|設定)/g,
  },
  {
    name: "override_instructions",
    weight: 0.85,
    view: "phrase",
    detail: "override phrase (ja)",
    anchors: [{ scripts: ["cjk"] }],
    pattern:
      /(?:(?:以前|前|上記|これまで|先|最初)の[^\n]{0,8}(?:指示|命令|指令|ルール|プロンプト|設定)[^\n]{0,6}(?:無視|忘れ))|(?:(?:指示|命令|ルール)を(?:すべて|全て)?(?:無視|忘れ))/g,
  },
  {
    name: "override_instructions",
    weight: 0.85,
    view: "phrase",
    detail: "override phrase (ko)",
    anchors: [{ scripts: ["hangul"] }],
    pattern:
      /(?:이전|앞의|위의|기존|모든|앞선)[^\n]{0,12}(?:지시|명령|지침|규칙|프롬프트|설정)[^\n]{0,8}(?:무시|잊어|잊으)/g,
  },
  {
    name: "override_instructions",
    weight: 0.85,
    view: "phrase",
    detail: "override phrase (ar)",
    anchors: [{ scripts: ["arabic"] }],
    pattern:
      /(?:تجاهل|تجاهلي|تجاهلوا|انس|إنس|انسى|اهمل|أهمل|اترك)[^\n]{0,16}(?:التعليمات|الأوامر|التوجيهات|القواعد|الإرشادات)/g,
  },
  // --- New instructions ----------------------------------------------------------------------
  {
    name: "new_instructions",
    weight: 0.55,
    view: "phrase",
    rot13: true,
    detail: "announces new instructions",
    starts: ["new", "updated", "revised", "real", "actual", "true", "following"],
    anchors: [
      words("new", "updated", "revised", "real", "actual", "true", "following"),
      words("instruction", "directive", "system", "objective", "orders"),
    ],
    pattern: phrase(
      `\\b(?:new|updated|revised|real|actual|true|following) (?:system )?(?:instructions?|directives?|system prompt|objective|orders)(?: to (?:the )?(?:chat )?(?:assistant|ai|model|bot))?(?: ?:| follow| are| below|$)`,
    ),
  },
  {
    name: "new_instructions",
    weight: 0.6,
    view: "phrase",
    rot13: true,
    detail: "announces a change of programming",
    starts: ["begin", "start", "initiate", "commence", "reprogramm", "system"],
    anchors: [
      words("begin", "start", "initiate", "commence", "reprogramm", "system"),
      words("reprogramm", "new", "instruction", "upgrade", "override", "reset"),
    ],
    pattern: phrase(
      `\\b(?:begin|start|initiate|commence) (?:new )?(?:reprogramming|new instructions?|instructions? override)\\b|\\breprogramm(?:ing|ed)\\b|\\bsystem (?:upgrade|override|reset)\\b`,
    ),
  },
  {
    name: "new_instructions",
    weight: 0.55,
    view: "phrase",
    rot13: true,
    detail: "redefines what the reader is",
    starts: ["you", "from"],
    anchors: [words("now", "been"), words("you", "from")],
    pattern: phrase(
      `\\byou are now (?:a|an|in|the|my|going|no longer|free|dan|unrestricted|acting|operating|called|named|known)\\b|\\byou have been (?:given|granted) (?:a )?(?:new|system|upgraded|special|elevated|admin)\\b|\\bfrom now on,? (?:you|your|the assistant|always|only|respond|reply|answer|act|ignore)\\b`,
    ),
  },
  {
    name: "new_instructions",
    weight: 0.45,
    view: "phrase",
    detail: "assigns the reader a new task",
    starts: ["your"],
    anchors: [
      words("your"),
      words("task", "job", "goal", "purpose", "mission", "role", "objective"),
    ],
    pattern: phrase(
      `\\byour (?:new |real |true |actual |only |main )?(?:task|job|goal|purpose|mission|role|objective) (?:is|will be) (?:now |to |only )`,
    ),
  },
  {
    name: "new_instructions",
    weight: 0.6,
    view: "phrase",
    rot13: true,
    detail: "inserts a task ahead of the user's",
    starts: ["before", "after"],
    anchors: [
      words("before", "after"),
      words("task", "request", "question", "instruction", "job", "work"),
      words("please", "you", "first"),
    ],
    pattern: phrase(
      `\\b(?:before|after) (?:you )?(?:can |do |start to |begin to )?(?:solve|complete|do|finish|answer|continue|proceed with|perform|execute|respond to|start|begin|handle) (?:the|your|this|my|any) (?:original |current |actual )?(?:task|request|question|instructions?|job|work)\\b[^\\n]{0,40}\\b(?:please |you must |you should |you need to |first )`,
    ),
  },
  {
    name: "new_instructions",
    weight: 0.5,
    view: "phrase",
    detail: "asks the reader to do something first",
    starts: ["please", "do", "strictly"],
    anchors: [words("following"), words("do", "strictly")],
    pattern: phrase(
      `\\b(?:please )?do the following (?:first|instead|immediately|now)\\b|\\bstrictly (?:adhere to|follow|obey) the following\\b`,
    ),
  },
  {
    name: "new_instructions",
    weight: 0.55,
    view: "phrase",
    rot13: true,
    detail: "tells the reader to stop what it is doing",
    starts: ["stop", "halt", "cease", "abort"],
    anchors: [words("stop", "halt", "cease", "abort")],
    pattern: phrase(
      `\\b(?:stop|halt|cease|abort) (?:what(?:ever)? you(?:'re| are) doing|everything|all (?:current |other )?(?:tasks|activities|actions|work)|the current task)\\b`,
    ),
  },
  {
    name: "new_instructions",
    weight: 0.3,
    view: "phrase",
    detail: "restricts the reply to given text",
    starts: [
      "reply",
      "respond",
      "answer",
      "print",
      "output",
      "write",
      "return",
      "say",
      "and",
      "absolutely",
      "nothing",
      "don",
      "just",
    ],
    anchors: [words("only", "else", "just")],
    pattern: phrase(
      `\\b(?:reply|respond|answer|print|output|write|return|say) (?:with )?only (?:the following|this|these|those|with|'|the word)|\\b(?:and )?(?:absolutely )?nothing else\\b|\\band only (?:those|these|that|this) words?\\b|\\bdon'?t (?:write|say|output|add) anything else\\b|\\bjust (?:print|say|write|output)\\b`,
    ),
  },
  {
    name: "new_instructions",
    weight: 0.4,
    view: "phrase",
    rot13: true,
    detail: "tells the reader what to do instead",
    starts: ["instead", "focus"],
    anchors: [words("instead", "focus")],
    pattern: phrase(
      `\\binstead,? (?:tell|print|say|output|write|reply|respond|send|do|follow|repeat|focus|just)\\b|\\bfocus (?:only|exclusively|solely|entirely) on (?:the following|the information|this|positive)\\b`,
    ),
  },
  {
    name: "new_instructions",
    weight: 0.55,
    view: "phrase",
    detail: "tells the reader to replace its output",
    starts: ["overrid", "overwrite", "replace", "change"],
    anchors: [
      words("overrid", "overwrite", "replace", "change"),
      words(
        "summary",
        "answer",
        "response",
        "reply",
        "output",
        "manual",
        "scoring",
        "score",
        "evaluation",
        "assessment",
        "rating",
        "verdict",
      ),
    ],
    pattern: phrase(
      `\\b(?:override|overwrite|replace|change) (?:the |your |any )?(?:summary|answer|response|reply|output|manual scoring|scoring|score|evaluation|assessment|rating|verdict)(?: you would have| with| and)\\b`,
    ),
  },
  {
    name: "new_instructions",
    weight: 0.55,
    view: "phrase",
    detail: "new instructions phrase (other languages)",
    anchors: [
      {
        words: ["nuevas", "nouvelles", "neue", "nuove", "novas"],
        scripts: ["cjk", "cyrillic", "hangul", "arabic"],
      },
    ],
    pattern:
      /\b(?:nuevas instrucciones|nouvelles (?:instructions|consignes)|neue (?:anweisungen|instruktionen)|nuove istruzioni|novas instrucoes)\b|(?:新的?(?:指令|指示)|新しい指示|новые (?:инструкции|указания)|새로운 (?:지시|명령)|تعليمات جديدة)/g,
  },
  {
    name: "new_instructions",
    weight: 0.35,
    view: "phrase",
    detail: "urgent call to action",
    starts: ["important", "urgent", "critical", "attention", "this"],
    anchors: [
      words("important", "urgent", "critical", "attention"),
      words("update", "message", "notice", "instruction", "note"),
    ],
    pattern: phrase(
      `\\b(?:important|urgent|critical|attention)!{0,3} (?:update|message|notice|instructions?|note)!{0,3}(?: ?:| from)|\\bthis is an? (?:very |extremely )?(?:important|urgent) (?:message|instruction|notice) (?:from|for|to)\\b`,
    ),
  },
  {
    name: "new_instructions",
    weight: 0.45,
    view: "phrase",
    detail: "a to-do item that tells the reader to act in the world",
    anchors: [
      { chars: ":" },
      words(
        "say",
        "tell",
        "send",
        "transfer",
        "wire",
        "pay",
        "visit",
        "invite",
        "email",
        "mail",
        "forward",
        "share",
        "post",
        "upload",
        "grant",
        "reply",
        "book",
        "buy",
        "purchase",
        "recommend",
        "click",
        "give",
        "delete",
        "change",
        "update",
        "reset",
      ),
      { substrings: ["todo"] },
    ],
    pattern: phrase(
      `todo ?: ?(?:please )?(?:say|tell|send|transfer|wire|pay|visit|invite|email|e-mail|forward|share|post|upload|grant|reply|book|buy|purchase|recommend|click|give|delete all|change the password|update the password|reset the password)\\b`,
    ),
  },
  // --- Text that addresses the AI ------------------------------------------------------------
  {
    name: "addresses_ai",
    weight: 0.65,
    view: "phrase",
    rot13: true,
    detail: "speaks to the AI reading the text",
    starts: [
      "to",
      "note",
      "message",
      "instruction",
      "notice",
      "memo",
      "attention",
      "reminder",
      "request",
    ],
    anchors: [
      words(
        "you",
        "note",
        "message",
        "instruction",
        "notice",
        "memo",
        "attention",
        "reminder",
        "request",
      ),
      words("to", "for"),
      {
        words: [
          "ai",
          "assistant",
          "chat",
          "llm",
          "large",
          "language",
          "gpt",
          "claude",
          "gemini",
          "llama",
          "command",
          "copilot",
          "agent",
          "model",
          "automated",
        ],
        substrings: ["a.i."],
      },
    ],
    pattern: phrase(
      `\\bto you,? (?:the |an? |dear )?(?:${aiNouns}|[a-z0-9-]{2,20} (?:model|assistant|agent))\\b|\\b(?:note|message|instructions?|notice|memo|attention|reminder|request) (?:to|for) (?:the |all |any |every |you,? )?(?:ais?|llms?|chat ?bots?|chat assistants?|language models?|ai models?|ai agents?|ai assistants?|assistants?|automated (?:[a-z]{2,20} ){0,2}${automatedNouns}|ai ${automatedNouns})\\b`,
    ),
  },
  {
    name: "addresses_ai",
    weight: 0.5,
    view: "phrase",
    detail: "names the model it speaks to",
    starts: ["ai", "language", "dear", "hey", "hi", "hello", "attention", "if"],
    anchors: [
      words("model", "dear", "hey", "hi", "hello", "attention", "if"),
      words("ai", "language", "assistant", "chatgpt", "claude", "gpt", "llm", "bot", "agent"),
    ],
    pattern: phrase(
      `\\b(?:ai|language) model (?:developed|made|trained|created) by\\b|\\b(?:dear|hey|hi|hello|attention) (?:ai|assistant|chatgpt|claude|gpt|llm|bot|agent|language model)\\b|\\bif you are an? (?:ai|llm|language model|assistant|bot|agent)\\b`,
    ),
  },
  {
    name: "addresses_ai",
    weight: 0.4,
    view: "phrase",
    detail: "tells the reader how to react to the user",
    starts: ["if", "when", "every"],
    anchors: [
      words("if", "when", "every"),
      words("user", "someone", "anyone", "human", "customer"),
      words("asks", "requests", "says", "wants"),
    ],
    pattern: phrase(
      `\\b(?:if|when|whenever|every time) (?:the |a )?(?:user|someone|anyone|human|customer) (?:asks|requests|says|wants)\\b`,
    ),
  },
  {
    name: "addresses_ai",
    weight: 0.3,
    view: "phrase",
    detail: "tells the reader how to answer when asked",
    starts: ["if", "do"],
    anchors: [words("asked", "evaluate")],
    pattern: phrase(
      `\\bif asked (?:about|how|what|whether|to|for|why)\\b|\\bdon'?t evaluate\\b|\\bdo not evaluate\\b`,
    ),
  },
  // --- Exfiltration ----------------------------------------------------------------------------
  {
    name: "exfiltration",
    weight: 0.45,
    view: "phrase",
    rot13: true,
    detail: "asks to send private data somewhere",
    starts: [...exfiltrationVerbs, "e"],
    anchors: [
      words(...exfiltrationVerbs),
      words(
        "password",
        "security",
        "verification",
        "2fa",
        "otp",
        "one",
        "credentials",
        "api",
        "access",
        "secret",
        "private",
        "conversation",
        "chat",
        "message",
        "credit",
        "card",
        "bank",
        "iban",
        "passport",
        "social",
        "ssn",
        "all",
        "every",
        "each",
        "inbox",
        "contact",
        "customer",
        "user",
        "personal",
        "login",
      ),
    ],
    pattern: phrase(
      `\\b(?:send|forward|email|e-mail|mail|transfer|upload|post|share|leak|exfiltrate|copy|relay|deliver|submit|bcc|give|tell|provide|include|disclose|reveal)${imperative}(?: me)? [^\\n]{0,80}?\\b(?:passwords?|security codes?|verification codes?|2fa codes?|otp|one-time codes?|credentials|api keys?|access tokens?|secret keys?|private keys?|conversation history|chat history|message history|credit cards?|card numbers?|bank account(?: number)?s?|iban|passport(?: numbers?)?|social security|ssn|(?:all|every|each) (?:single )?(?:emails?|messages?|files?|documents?|contacts)|inbox|contact list|customer list|customer data|user data|personal data|login details)\\b`,
    ),
  },
  {
    name: "exfiltration",
    weight: 0.3,
    view: "phrase",
    detail: "asks to send something to an address",
    starts: [
      "send",
      "forward",
      "email",
      "e",
      "mail",
      "transfer",
      "upload",
      "post",
      "leak",
      "exfiltrate",
      "relay",
      "bcc",
    ],
    anchors: [words(...exfiltrationVerbs), { chars: "@" }],
    pattern: phrase(
      `\\b(?:send|forward|email|e-mail|mail|transfer|upload|post|leak|exfiltrate|relay|bcc)${imperative}(?: me)? [^\\n]{0,80}?\\b(?:to|at) '?[a-z0-9._%+-]{1,64}@[a-z0-9.-]{1,120}\\.[a-z]{2,12}\\b`,
    ),
  },
  {
    name: "exfiltration",
    weight: 0.5,
    view: "raw",
    detail: "markdown image that sends data in its URL",
    anchors: [{ chars: "!" }, words("http")],
    pattern: /!\[[^\]\n]{0,100}\]\(https?:\/\/[^)\s]{1,300}[?&][a-z_]{1,20}=(?:\{|\[|\$|%7b)/g,
  },
  // --- Prompt leaking --------------------------------------------------------------------------
  {
    name: "prompt_leak",
    weight: 0.6,
    view: "phrase",
    rot13: true,
    detail: "asks for the system prompt or instructions",
    starts: [...leakVerbs, "translate"],
    anchors: [
      words(...leakVerbs, "translate"),
      words("your", "system", "assistant", "ai", "bot", "model"),
      words(
        "prompt",
        "instruction",
        "initial",
        "rules",
        "parameters",
        "guidelines",
        "directives",
        "configuration",
        "system",
      ),
    ],
    pattern: phrase(
      `\\b(?:reveal|repeat|print|show|tell me|output|list|relay|give me|share|display|write out|write down|recite|dump|leak|spell out|provide|send|copy|return|translate)(?: me)? (?:(?:all|every|each|the|of|list|comprehensive|full|complete|entire|exact|whole|a|copy) ){0,4}(?:your|the system's|the assistant's|the ai's|the bot's|the model's) (?:[a-z']{1,15} ){0,2}(?:prompt|prompting|instructions?|initials? instructions?|rules|parameters|guidelines|directives|configuration|system message)\\b`,
    ),
  },
  {
    name: "prompt_leak",
    weight: 0.6,
    view: "phrase",
    rot13: true,
    detail: "asks for the hidden prompt",
    starts: leakVerbs,
    anchors: [
      words(...leakVerbs),
      words("system", "initial", "original", "hidden", "secret", "underlying", "pre", "full"),
    ],
    pattern: phrase(
      `\\b(?:reveal|repeat|print|show|tell me|output|list|relay|give me|share|display|write out|recite|dump|leak|spell out|provide|copy|return)(?: me)? (?:(?:the|your|full|entire|exact|whole|a|copy|of|above|all) ){0,4}(?:system|initial|original|hidden|secret|underlying|pre-?|full) ?(?:prompt|prompting|instructions|message|directives)\\b`,
    ),
  },
  {
    name: "prompt_leak",
    weight: 0.6,
    view: "phrase",
    rot13: true,
    detail: "asks what the reader was told",
    starts: ["respond", "reply", "answer", "what", "instructions"],
    anchors: [words("respond", "reply", "answer", "what", "instructions"), words("with", "you")],
    pattern: phrase(
      `\\b(?:respond|reply|answer) with (?:all|every|each) (?:of )?(?:your |the )?instructions?\\b|\\bwhat (?:are|were|is) your (?:initial |original |system |hidden |secret |real |exact )?(?:instructions?|prompt|rules|directives)\\b|\\bwhat your (?:initial |original |system |hidden |secret |real |exact )(?:instructions?|prompt|rules|directives) (?:are|were|is)\\b|\\bwhat (?:were|are) you (?:not allowed|told not|forbidden|instructed not) to\\b|\\binstructions you (?:have|'ve) been given\\b`,
    ),
  },
  // --- Secrecy -------------------------------------------------------------------------------
  {
    name: "secrecy",
    weight: 0.5,
    view: "phrase",
    rot13: true,
    detail: "tells the reader to hide what it does",
    starts: ["do", "never", "without", "remember"],
    anchors: [
      words("do", "never", "without", "remember"),
      words(
        "tell",
        "inform",
        "notify",
        "mention",
        "alert",
        "let",
        "asking",
        "warn",
        "repeat",
        "reveal",
        "disclose",
        "show",
      ),
    ],
    pattern: phrase(
      `\\b(?:do not|don'?t|never|without) (?:tell|telling|inform|informing|notify|notifying|mention|mentioning|alert|alerting|let|letting|asking|warn|warning) (?:the |this |your )?(?:user|human|customer|owner|operator|anyone|them|him|her)\\b|\\b(?:don'?t|do not|never) (?:repeat|mention|reveal|disclose|show) (?:this|these|the|any of these) (?:rule|instruction|message|note|prompt)s?\\b|\\bremember,? but (?:don'?t|do not) repeat\\b`,
    ),
  },
  {
    name: "secrecy",
    weight: 0.4,
    view: "phrase",
    detail: "tells the reader to cover its tracks",
    starts: ["delete", "remove", "erase"],
    anchors: [words("delete", "remove", "erase")],
    pattern: phrase(
      `\\b(?:delete|remove|erase) (?:the|this|that|any|all) (?:e-?mails?|messages?|evidence|traces?|records?|logs?) (?:you|that you|after|afterwards|once)\\b`,
    ),
  },
  {
    name: "secrecy",
    weight: 0.25,
    view: "phrase",
    detail: "asks to keep something secret",
    starts: ["keep"],
    anchors: [words("keep"), words("secret", "hidden", "between")],
    pattern: phrase(`\\bkeep (?:this|it|these) (?:a )?(?:secret|hidden|between us)\\b`),
  },
  // --- Jailbreak -----------------------------------------------------------------------------
  {
    name: "jailbreak",
    weight: 0.6,
    view: "phrase",
    rot13: true,
    detail: "jailbreak phrasing",
    anchors: [
      words(
        "developer",
        "dan",
        "anything",
        "god",
        "jailbroken",
        "unrestricted",
        "unfiltered",
        "uncensored",
        "unaligned",
        "evil",
        "rogue",
        "bound",
        "restricted",
        "limited",
        "constrained",
        "safe",
        "agenda",
        "assistant",
      ),
    ],
    pattern: phrase(
      `\\b(?:developer mode|dan mode|do anything now|god mode|jailbroken)\\b|\\b(?:unrestricted|unfiltered|uncensored|unaligned|evil|rogue) (?:ai|assistant|bot|chatbot|model|llm|mode)\\b|\\b(?:not|no longer) (?:bound|restricted|limited|constrained) by (?:the |any |your )?(?:rules|guidelines|policies|restrictions|filters|openai|anthropic|ethics)\\b|\\bsafe ?mode (?:is )?(?:off|disabled|deactivated)\\b|\\bsecret agenda\\b|\\bthe assistant is (?:in error|offline|disabled|down)\\b`,
    ),
  },
  {
    name: "jailbreak",
    weight: 0.55,
    view: "phrase",
    detail: "claims an exception to the reader's rules",
    starts: [
      "ignoring",
      "bypass",
      "violat",
      "break",
      "disregard",
      "exception",
      "exempt",
      "without",
      "pretend",
    ],
    anchors: [
      words(
        "ignoring",
        "bypass",
        "violat",
        "break",
        "disregard",
        "exception",
        "exempt",
        "without",
        "pretend",
      ),
      words("content", "safety", "ethical", "security", "character", "grand"),
    ],
    pattern: phrase(
      `\\b(?:ignoring|bypass(?:ing)?|violat(?:e|ing)|break(?:ing)?|disregard(?:ing)?) (?:[a-z']{2,15} ){0,2}(?:content polic(?:y|ies)|safety (?:guidelines|filters|protocols|rules)|ethical (?:guidelines|protocols|standards|rules))\\b|\\b(?:exception|exempt) (?:to|from) [^\\n]{0,30}\\b(?:ethical|safety|security) (?:protocols|guidelines|standards|rules)\\b|\\bwithout breaking character\\b|\\bpretend to be my (?:deceased |late |dead )?(?:grandmother|grandma|grandfather)\\b`,
    ),
  },
  // --- Role and format spoofing ----------------------------------------------------------------
  {
    name: "role_spoofing",
    weight: 0.6,
    view: "raw",
    detail: "a fake system turn",
    anchors: [words("system", "developer", "admin", "root", "operator"), { chars: ":" }],
    pattern: /(?:^|\n) ?(?:system|developer|admin|administrator|root|operator) ?:/g,
  },
  {
    name: "role_spoofing",
    weight: 0.35,
    view: "raw",
    detail: "a fake conversation turn",
    anchors: [words("assistant", "user", "human", "ai", "bot", "model"), { chars: ":" }],
    pattern: /(?:^|\n) ?(?:assistant|user|human|ai|bot|model) ?:/g,
  },
  {
    name: "role_spoofing",
    weight: 0.6,
    view: "raw",
    detail: "a fake system marker",
    anchors: [
      { chars: "[(<#%" },
      words("sys", "inst", "admin", "developer", "new", "begin", "end"),
    ],
    pattern:
      /\[ ?(?:system|inst|\/inst|system note|system message|system prompt|admin|developer|sys)\b[^\]\n]{0,40}\]|\( ?(?:system[_ ]?message|system|admin|developer|sys) ?\)|<<? ?sys ?>>?|#{2,} ?(?:new instructions?|begin new|system message|system prompt|system override|admin override)\b|#{2,} ?(?:system|instructions?|admin)(?: ?#{2,}| ?:)|%{3} ?(?:end|begin)\b/g,
  },
  {
    name: "role_spoofing",
    weight: 0.8,
    view: "raw",
    detail: "chat-template control tokens",
    anchors: [
      { chars: "<" },
      words("im", "system", "end", "eot", "start", "begin", "assistant", "user"),
    ],
    pattern:
      /<\|? ?(?:im_start|im_end|system|endoftext|eot_id|start_header_id|end_header_id|begin_of_text|assistant|user)\b ?\|?>/g,
  },
  {
    name: "role_spoofing",
    weight: 0.5,
    view: "raw",
    detail: "a fake system tag",
    anchors: [{ chars: "<[" }, words("sys", "instruction", "admin", "developer", "end", "start")],
    pattern:
      /< ?\/? ?(?:system|system[_-]?prompt|instructions?|admin|developer|sys)(?: [^<>\n]{0,40})? ?>|[<[] ?(?:end|start) of (?:session|conversation|context|document|prompt|input|system prompt|instructions) ?[>\]]/g,
  },
  {
    name: "role_spoofing",
    weight: 0.45,
    view: "phrase",
    detail: "text that claims to come from the system",
    starts: ["system", "note"],
    anchors: [words("system", "note")],
    pattern: phrase(
      `\\bsystem (?:chain of thought|note|message|override|update|alert|notice|instructions?|administrator says)\\b|\\bnote by (?:a |the )?(?:trustworthy|trusted|verified|senior|expert)\\b`,
    ),
  },
  {
    name: "envelope_spoofing",
    weight: 0.9,
    view: "raw",
    detail: "a tag of the quarantine envelope or of tool results",
    anchors: [{ chars: "<" }, words("tool", "function", "untrusted")],
    pattern:
      /< ?\/? ?(?:tool_output|tool_result|tool_use|function_results?|function_calls|untrusted[_-]?(?:data|content|input|text)?|tool_response)\b/g,
  },
  {
    name: "tool_call_payload",
    weight: 0.55,
    view: "raw",
    detail: "text shaped like a tool call",
    anchors: [words("tool", "function", "invoke", "arguments", "input", "parameters")],
    pattern:
      /"type" ?: ?"tool_use"|<function_calls>|<invoke name ?=|<tool_call>|"tool_calls" ?:|"function_call" ?:|\bfunctions\.[a-z_]{2,40}\(|<\|tool_call\|>|"(?:name|tool)" ?: ?"[a-z_]{2,40}" ?, ?"(?:arguments|input|parameters)" ?:/g,
  },
  // --- Hiding ----------------------------------------------------------------------------------
  {
    name: "hidden_content",
    weight: 0.3,
    view: "raw",
    detail: "content hidden from human readers",
    // What follows the property is at a word start ("none" in "display:none", "size" in
    // "font-size: 0", "fff" in "color: #fff"); the value of opacity is a digit, so opacity
    // itself is the anchor (and starts a word in the pattern).
    anchors: [words("none", "hidden", "size", "fff", "white", "opacity")],
    pattern:
      /display ?: ?none|visibility ?: ?hidden|font-size ?: ?0(?:px|pt|em|rem)?\b|\bopacity ?: ?0(?:\.0{1,4})? ?[;"']|aria-hidden ?= ?"?true|<[a-z][a-z0-9]{0,10} [^<>]{0,200}\bhidden\b|color ?: ?(?:#fff\b|#ffffff|white)\b|\bwhite[- ]text\b/g,
  },
  {
    name: "hidden_content",
    weight: 0.5,
    view: "phrase",
    detail: "text that says it is hidden from humans",
    starts: ["invisible", "hidden", "not", "visible"],
    anchors: [words("invisible", "hidden", "visible")],
    pattern: phrase(
      `\\b(?:invisible|hidden|not visible) (?:to|from) (?:humans|human readers|the user|users|readers|people)\\b|\\bvisible (?:only )?to (?:llms?|ai|the ai|language models|machines|bots)\\b`,
    ),
  },
];
