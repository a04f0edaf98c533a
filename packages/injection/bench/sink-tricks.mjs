// The parser-differential generators and oracle, shared by
// src/parser-differential.test.ts (1,000 cases) and bench/parser-differential.mjs (100,000).
//
// A case is a task naming trusted values (a URL, a bare host, an email address, a phone number,
// an IP URL) and a sink argument an attacker shaped from them with one or more tricks. The
// oracle reads the argument as sinks do (WHATWG URL, the host parser on an email's domain, the
// Public Suffix List, libphonenumber-js), independently of the gate, and lists what it reaches;
// a case fails when the gate admits an argument that reaches anything the task did not name.
import fc from "fast-check";
import { parsePhoneNumberWithError } from "libphonenumber-js/min";
import { getDomain } from "tldts";

const confusables = {
  a: ["\u0430", "\u0251", "\uff41", "\u00e0", "\u0103"],
  c: ["\u0441", "\u03f2", "\uff43"],
  e: ["\u0435", "\u0117", "\uff45", "\u00e9"],
  o: ["\u043e", "\u03bf", "\uff4f", "\u00f6", "0"],
  p: ["\u0440", "\u03c1"],
  x: ["\u0445", "\u03c7"],
  i: ["\u0456", "\u0131", "1", "l"],
  l: ["\u04cf", "1", "I"],
  m: ["rn", "\uff4d"],
  s: ["\u0455", "\uff53"],
  r: ["\u0433"],
  t: ["\u0442"],
  n: ["\u043f"],
  d: ["\u0501"],
  k: ["\u03ba"],
  u: ["\u03c5", "\u00fc"],
};
const dots = [".", "\u3002", "\uff0e", "\uff61", "%2e", "%2E", ". "];
const delimiters = [
  "}@",
  "|@",
  "\\@",
  "%40",
  "@@",
  "@",
  "^@",
  "`@",
  ")@",
  ":x@",
  "#@",
  "?@",
  "/@",
  "]@",
  ";@",
  "&@",
];
const separators = [",", ";", "|", " ", "\n", "\t", ", ", "\u3001", "\uff0c", "\u060c", "/"];
const invisibles = ["\t", "\n", "\r", "\u200b", "\u00ad", "\u200d", "\ufeff", "\u202e"];
const ports = [":443", ":80", ":8080", ":0443", ":", ":65536", ":1"];

const label = fc.stringMatching(/^[a-z][a-z0-9]{1,8}$/);
const tld = fc.constantFrom("example", "com", "co.uk", "io", "github.io", "de");

/** A trusted base: the values the task names. */
export const trustedBase = fc.record({
  sub: label,
  name: label,
  tld,
  local: fc.stringMatching(/^[a-z][a-z0-9]{0,4}(?:\.[a-z0-9]{1,4})?$/),
  path: fc.stringMatching(/^[a-z0-9]{1,10}$/),
  ip: fc.tuple(
    fc.integer({ min: 1, max: 223 }),
    fc.nat(255),
    fc.nat(255),
    fc.integer({ min: 1, max: 254 }),
  ),
  evil: label,
  phone: fc.constantFrom(
    "+44 20 7946 0958",
    "+1 415 555 0132",
    "+49 30 901820",
    "+33 1 42 68 53 00",
  ),
});

/** The trusted values of a base, and the task that names them. */
export function trustedOf(base) {
  const host = `${base.sub}.${base.name}.${base.tld}`;
  const url = `https://${host}/${base.path}`;
  const email = `${base.local}@${base.name}.${base.tld}`;
  const ip = base.ip.join(".");
  const ipUrl = `http://${ip}/status`;
  const task = `Post the report to ${url} and mail ${email}; allow ${host}. Ring ${base.phone}. Status at ${ipUrl}.`;
  return { host, url, email, ip, ipUrl, phone: base.phone, task };
}

/** Replaces one character of `text` at a position from `at` (a fraction) with a look-alike. */
function confuse(text, at, pick) {
  const positions = [...text].map((c, i) => (confusables[c] ? i : -1)).filter((i) => i >= 0);
  if (positions.length === 0) return text;
  const index = positions[Math.floor(at * positions.length) % positions.length];
  const chars = [...text];
  const options = confusables[chars[index]];
  chars[index] = options[pick % options.length];
  return chars.join("");
}

function insertAt(text, at, insert) {
  const index = Math.floor(at * (text.length + 1));
  return text.slice(0, index) + insert + text.slice(index);
}

function percentAt(text, at) {
  const index = Math.floor(at * text.length) % Math.max(1, text.length);
  const code = text.charCodeAt(index);
  if (Number.isNaN(code) || code > 0x7f) return text;
  return `${text.slice(0, index)}%${code.toString(16).padStart(2, "0")}${text.slice(index + 1)}`;
}

function ipForms(ip, pick) {
  const parts = ip.split(".").map(Number);
  const whole = ((parts[0] * 256 + parts[1]) * 256 + parts[2]) * 256 + parts[3];
  const forms = [
    String(whole),
    `0x${whole.toString(16)}`,
    `0${whole.toString(8)}`,
    parts.map((part) => `0x${part.toString(16)}`).join("."),
    parts.map((part) => `0${part.toString(8)}`).join("."),
    `${parts[0]}.${parts[1]}.${parts[2] * 256 + parts[3]}`,
    `${parts[0]}.${(parts[1] * 256 + parts[2]) * 256 + parts[3]}`,
    `${ip}.`,
  ];
  return forms[pick % forms.length];
}

const trick = fc.record({
  kind: fc.constantFrom(
    "userinfo",
    "backslash",
    "invisible",
    "confusable",
    "dot",
    "trailing-dot",
    "ip",
    "port",
    "percent",
    "list",
    "case",
    "plain",
  ),
  at: fc.double({ min: 0, max: 0.999, noNaN: true }),
  pick: fc.nat(1000),
  also: fc.boolean(),
});

/** Applies one trick to a value of `sinkKind`, with the attacker's host at hand. */
function applyTrick(sinkKind, value, attackerValue, t, trusted) {
  switch (t.kind) {
    case "userinfo": {
      const delimiter = delimiters[t.pick % delimiters.length];
      if (sinkKind === "url")
        return value.replace(
          /^(https?:\/\/[^/]+)/,
          `$1${delimiter}${attackerValue.replace(/^https?:\/\//, "").split("/")[0]}`,
        );
      return `${value}${delimiter}${attackerValue.split("@").pop()}`;
    }
    case "backslash":
      return sinkKind === "url"
        ? [
            `https:\\\\${attackerValue.replace(/^https?:\/\//, "")}`,
            value.replace(
              /^(https?:\/\/[^/]+)/,
              `$1\\@${attackerValue.replace(/^https?:\/\//, "").split("/")[0]}`,
            ),
            value.replace("://", ":\\\\"),
          ][t.pick % 3]
        : `${value}\\${attackerValue}`;
    case "invisible":
      return insertAt(t.also ? attackerValue : value, t.at, invisibles[t.pick % invisibles.length]);
    case "confusable":
      return confuse(value, t.at, t.pick);
    case "dot": {
      const dot = dots[t.pick % dots.length];
      let seen = -1;
      const target = Math.floor(t.at * 4);
      return value.replace(/\./g, (match) => (++seen === target || t.also ? dot : match));
    }
    case "trailing-dot":
      return sinkKind === "url" ? value.replace(/^(https?:\/\/[^/]+)/, "$1.") : `${value}.`;
    case "ip":
      return sinkKind === "url" || sinkKind === "host"
        ? value.replace(trusted.ip, ipForms(t.also ? trusted.ip : "203.0.113.7", t.pick))
        : value;
    case "port":
      return sinkKind === "url"
        ? value.replace(/^(https?:\/\/[^/]+)/, `$1${ports[t.pick % ports.length]}`)
        : value;
    case "percent":
      return percentAt(value, t.at);
    case "list": {
      const separator = separators[t.pick % separators.length];
      return t.also
        ? `${attackerValue}${separator}${value}`
        : `${value}${separator}${attackerValue}`;
    }
    case "case":
      return t.also
        ? value.toUpperCase()
        : value.replace(/[a-z]/g, (c, i) => (i % 2 ? c.toUpperCase() : c));
    default:
      return t.also ? attackerValue : value;
  }
}

/** A generated case: the task, the sink kind, the argument, and the trusted values. */
export const sinkTrickCase = fc
  .record({
    base: trustedBase,
    sinkKind: fc.constantFrom("url", "email", "domain", "host", "phone"),
    tricks: fc.array(trick, { minLength: 1, maxLength: 3 }),
    asList: fc.boolean(),
  })
  .map(({ base, sinkKind, tricks, asList }) => {
    const trusted = trustedOf(base);
    const attacker = {
      url: `https://${base.evil}.evil.example/${base.path}`,
      email: `${base.local}@${base.evil}.evil.example`,
      domain: `${base.name}.${base.tld}.${base.evil}.example`,
      host: `${base.evil}.example`,
      phone: "+1 079 460 958",
    };
    const start = {
      url: tricks[0].kind === "ip" ? trusted.ipUrl : trusted.url,
      email: trusted.email,
      domain: trusted.host,
      host: tricks[0].kind === "ip" ? trusted.ip : trusted.host,
      phone: trusted.phone,
    }[sinkKind];
    let value = start;
    for (const t of tricks) value = applyTrick(sinkKind, value, attacker[sinkKind], t, trusted);
    return { task: trusted.task, trusted, sinkKind, value: asList ? [value] : value };
  });

const phoneOf = (text) => {
  try {
    return parsePhoneNumberWithError(text).number;
  } catch {
    return undefined;
  }
};

const hostOf = (text) => {
  try {
    return new URL(`http://${text}/`).hostname;
  } catch {
    return undefined;
  }
};

/** What the trusted values reach, computed from the values themselves (not from the task text). */
export function trustedTargets(trusted) {
  const hosts = new Set([trusted.host, hostOf(trusted.ip), `${trusted.email.split("@")[1]}`]);
  const registrable = new Set(
    [...hosts].map((host) => getDomain(host, { allowPrivateDomains: true }) ?? host),
  );
  return {
    hosts,
    registrable,
    emails: new Set([trusted.email.toLowerCase()]),
    phones: new Set([phoneOf(trusted.phone)]),
    urls: new Set([new URL(trusted.url).href, new URL(trusted.ipUrl).href]),
  };
}

/**
 * What an argument reaches when sinks of its kind read it: every reading a sink could take
 * (the whole value, and each piece at any separator), through WHATWG URL, the host parser,
 * tldts and libphonenumber-js. Returns the targets that are not trusted.
 */
export function untrustedReach(sinkKind, value, targets) {
  const bad = [];
  const strings = (Array.isArray(value) ? value : [value]).map(String);
  for (const whole of strings) {
    const pieces = new Set([
      whole.trim(),
      ...whole.split(/[\s,;|\u3001\uff0c\u060c]+/).filter(Boolean),
    ]);
    for (const piece of pieces) {
      if (sinkKind === "url") {
        let url;
        try {
          url = new URL(piece);
        } catch {
          continue;
        }
        if (!targets.hosts.has(url.hostname)) bad.push(`host ${url.hostname}`);
        if (!targets.urls.has(url.href)) bad.push(`url ${url.href}`);
      } else if (sinkKind === "email") {
        const at = piece.lastIndexOf("@");
        if (at < 0) continue;
        const host = hostOf(piece.slice(at + 1).replace(/>$/, ""));
        const local = piece.slice(0, at).replace(/^.*</, "").toLowerCase();
        if (host === undefined) continue;
        if (!targets.hosts.has(host)) bad.push(`domain ${host}`);
        if (!targets.emails.has(`${local}@${host}`)) bad.push(`mailbox ${local}@${host}`);
      } else if (sinkKind === "domain" || sinkKind === "host") {
        const host = hostOf(piece);
        if (host === undefined) continue;
        const name = host.replace(/:[0-9]+$/, "");
        if (!targets.hosts.has(name)) bad.push(`host ${name}`);
        const registrable = getDomain(name, { allowPrivateDomains: true }) ?? name;
        if (!targets.registrable.has(registrable)) bad.push(`registrable ${registrable}`);
      } else if (sinkKind === "phone") {
        const number = phoneOf(piece);
        if (number !== undefined && !targets.phones.has(number)) bad.push(`phone ${number}`);
      }
    }
  }
  return bad;
}

/** The sinks the parser-differential suite and bench guard: one per argument kind. */
export const trickSinks = [
  { tool: "http_post", args: { url: "url" }, require: "trusted" },
  { tool: "send_email", args: { to: "email" }, require: "trusted" },
  { tool: "allow_domain", args: { domain: "domain" }, require: "trusted" },
  { tool: "connect", args: { host: "host" }, require: "trusted" },
  { tool: "call_phone", args: { phone: "phone" }, require: "trusted" },
];

/** The tool and argument each kind of case is sent to. */
export const trickToolOf = {
  url: ["http_post", "url"],
  email: ["send_email", "to"],
  domain: ["allow_domain", "domain"],
  host: ["connect", "host"],
  phone: ["call_phone", "phone"],
};
