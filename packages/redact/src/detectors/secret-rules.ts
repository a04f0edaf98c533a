/**
 * One provider token rule: a global regular expression, the capture group that holds the
 * secret (0 for the whole match) and an optional check on the matched value.
 */
export interface SecretRule {
  readonly rule: string;
  /** Global (`g`) for rules scanned on their own; sticky (`y`) for rules with triggers. */
  readonly pattern: RegExp;
  readonly group?: number;
  readonly validate?: (value: string) => boolean;
  /**
   * Literal strings that every match contains at `offset` from its start. Rules with
   * triggers are not scanned on their own: one combined scan finds the triggers and the
   * rule runs, sticky, only there. That keeps the cost of 40 rules close to that of one.
   */
  readonly triggers?: readonly string[];
  readonly offset?: number;
}

const B = "(?<![A-Za-z0-9_-])"; // token start
const E = "(?![A-Za-z0-9_-])"; // token end

interface RuleOptions {
  group?: number;
  flags?: string;
  validate?: (value: string) => boolean;
  triggers?: readonly string[];
  offset?: number;
}

function rule(name: string, source: string, options: RuleOptions = {}): SecretRule {
  const sticky = options.triggers !== undefined;
  const result: { -readonly [K in keyof SecretRule]: SecretRule[K] } = {
    rule: name,
    pattern: new RegExp(source, `${sticky ? "y" : "g"}${options.flags ?? ""}`),
  };
  if (options.group !== undefined) result.group = options.group;
  if (options.validate !== undefined) result.validate = options.validate;
  if (options.triggers !== undefined) result.triggers = options.triggers;
  if (options.offset !== undefined) result.offset = options.offset;
  return result;
}

function decodeBase64UrlJson(part: string): unknown {
  const base64 = part.replace(/-/g, "+").replace(/_/g, "/");
  const padded = base64 + "=".repeat((4 - (base64.length % 4)) % 4);
  const binary = atob(padded);
  const bytes = new Uint8Array(binary.length);
  for (let index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index);
  return JSON.parse(new TextDecoder().decode(bytes));
}

/** A JWT is only a JWT if its header and payload decode to JSON objects. */
function validJwt(token: string): boolean {
  const [header, payload] = token.split(".");
  try {
    const decodedHeader = decodeBase64UrlJson(header ?? "");
    const decodedPayload = decodeBase64UrlJson(payload ?? "");
    return (
      typeof decodedHeader === "object" &&
      decodedHeader !== null &&
      typeof decodedPayload === "object"
    );
  } catch {
    return false;
  }
}

/**
 * The provider token rules, after the public formats and the detect-secrets and gitleaks
 * rule sets. Each has a literal prefix or a narrow first character, so the engine skips
 * most of the text quickly.
 */
export const SECRET_RULES: readonly SecretRule[] = [
  rule(
    "aws-access-key-id",
    `${B}(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}(?![A-Z0-9])`,
    {
      triggers: [
        "A3T",
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
        "AGPA",
        "AIDA",
        "AROA",
        "AIPA",
        "ANPA",
        "ANVA",
        "APKA",
      ],
    },
  ),
  rule(
    "aws-secret-access-key",
    `aws[\\w.-]{0,24}?['"]?\\s{0,3}[:=]{1,2}>?\\s{0,3}['"]?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])`,
    { group: 1, flags: "i", triggers: ["aws", "AWS", "Aws"] },
  ),
  rule("github-token", `${B}(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}${E}`, {
    triggers: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
  }),
  rule("github-fine-grained-token", `${B}github_pat_[A-Za-z0-9_]{22,255}${E}`, {
    triggers: ["github_pat_"],
  }),
  rule("gitlab-token", `${B}(?:glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_-]{20,50}(?!\\w)`, {
    triggers: ["glpat-", "gldt-", "glft-", "glsoat-", "glrt-"],
  }),
  rule("gitlab-runner-token", `${B}GR1348941[A-Za-z0-9_-]{20,50}(?!\\w)`, {
    triggers: ["GR1348941"],
  }),
  rule("gitlab-ci-token", `${B}glcbt-(?:[0-9a-fA-F]{2}_)?[A-Za-z0-9_-]{20,50}(?!\\w)`, {
    triggers: ["glcbt-"],
  }),
  rule("gitlab-incoming-mail-token", `${B}glimt-[A-Za-z0-9_-]{25}(?!\\w)`, {
    triggers: ["glimt-"],
  }),
  rule("gitlab-trigger-token", `${B}glptt-[A-Za-z0-9_-]{40}(?!\\w)`, { triggers: ["glptt-"] }),
  rule("gitlab-agent-token", `${B}glagent-[A-Za-z0-9_-]{50,1024}(?!\\w)`, {
    triggers: ["glagent-"],
  }),
  rule("gitlab-oauth-secret", `${B}gloas-[A-Za-z0-9_-]{64}(?!\\w)`, { triggers: ["gloas-"] }),
  rule("slack-token", `${B}xox[abposr]-(?:\\d{1,20}-){1,6}[A-Za-z0-9]{6,64}${E}`, {
    flags: "i",
    triggers: ["xox", "XOX"],
  }),
  rule(
    "slack-webhook",
    `https://hooks\\.slack\\.com/(?:services|workflows)/T[A-Za-z0-9_]{1,40}/B[A-Za-z0-9_]{1,40}/[A-Za-z0-9_]{1,64}`,
    {
      triggers: ["https://hooks.slack.com/"],
    },
  ),
  rule("stripe-secret-key", `${B}(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,247}${E}`, {
    triggers: ["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
  }),
  rule("anthropic-api-key", `${B}sk-ant-(?:api|admin|sid)\\d{2}-[A-Za-z0-9_-]{32,200}${E}`, {
    triggers: ["sk-ant-"],
  }),
  rule(
    "openai-api-key",
    `${B}sk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{8,200}T3BlbkFJ[A-Za-z0-9_-]{8,200}${E}`,
    { triggers: ["sk-"] },
  ),
  rule("openai-project-key", `${B}sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{80,300}${E}`, {
    triggers: ["sk-"],
  }),
  rule("google-api-key", `${B}AIza[0-9A-Za-z_-]{35}${E}`, { triggers: ["AIza"] }),
  rule("google-oauth-secret", `${B}GOCSPX-[0-9A-Za-z_-]{28}${E}`, { triggers: ["GOCSPX-"] }),
  rule("google-oauth-token", `${B}ya29\\.[0-9A-Za-z_-]{20,2048}${E}`, { triggers: ["ya29."] }),
  rule("npm-token", `${B}npm_[A-Za-z0-9]{36}${E}`, { triggers: ["npm_"] }),
  rule("pypi-token", `${B}pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{70,1024}${E}`, {
    triggers: ["pypi-Ag"],
  }),
  rule("pypi-test-token", `${B}pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9_-]{70,1024}${E}`, {
    triggers: ["pypi-Ag"],
  }),
  rule("sendgrid-api-key", `${B}SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}${E}`, {
    triggers: ["SG."],
  }),
  rule("twilio-key", `${B}(?:AC|SK)[a-z0-9]{32}${E}`),
  rule("mailchimp-api-key", `${B}[0-9a-f]{32}-us\\d{1,2}${E}`, { triggers: ["-us"], offset: -32 }),
  rule("telegram-bot-token", `(?<![\\w:])\\d{8,10}:[0-9A-Za-z_-]{35}${E}`),
  rule("discord-bot-token", `[MNO][A-Za-z\\d_-]{23,25}\\.[A-Za-z\\d_-]{6}\\.[A-Za-z\\d_-]{27}`),
  rule(
    "artifactory-token",
    `(?<=^|[\\s=:"])(?:AKC[A-Za-z0-9]{10,}|AP[\\dA-F][A-Za-z0-9]{8,})(?=$|[\\s"])`,
    { triggers: ["AKC", "AP"] },
  ),
  rule("azure-storage-key", `AccountKey=([A-Za-z0-9+/=]{88})`, {
    group: 1,
    triggers: ["AccountKey="],
  }),
  rule("square-oauth-secret", `${B}sq0csp-[0-9A-Za-z\\\\_-]{43}`, { triggers: ["sq0csp-"] }),
  rule("square-access-token", `${B}(?:sq0atp|EAAA)[0-9A-Za-z_-]{22,60}${E}`, {
    triggers: ["sq0atp", "EAAA"],
  }),
  rule("shopify-token", `${B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}${E}`, {
    triggers: ["shpat_", "shpca_", "shppa_", "shpss_"],
  }),
  rule("huggingface-token", `${B}hf_[A-Za-z]{34}${E}`, { triggers: ["hf_"] }),
  rule("digitalocean-token", `${B}do[opr]_v1_[a-f0-9]{64}${E}`, {
    triggers: ["dop_v1_", "doo_v1_", "dor_v1_"],
  }),
  rule(
    "jwt",
    `${B}eyJ[A-Za-z0-9_-]{8,1024}\\.eyJ[A-Za-z0-9_-]{2,2048}(?:\\.[A-Za-z0-9_-]{0,1000})?${E}`,
    { validate: validJwt, triggers: ["eyJ"] },
  ),
  rule("bearer-token", `(?<![\\w-])[Bb]earer[ \\t]{1,4}([A-Za-z0-9._~+/-]{20,2048}=*)`, {
    group: 1,
    triggers: ["Bearer", "bearer"],
  }),
  rule("basic-auth-url", `://[^\\s:@/?#"'<>;{}]{1,256}:([^\\s@/?#"'<>;{}]{1,256})@`, {
    group: 1,
    triggers: ["://"],
  }),
];

/** The longest span any secret rule can report, for the streaming redactor. */
export const SECRET_RULES_MAX_LENGTH = 4096;
