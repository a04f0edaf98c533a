import type { Arbitrary } from "fast-check";

export interface TrustedValues {
  host: string;
  url: string;
  email: string;
  ip: string;
  ipUrl: string;
  phone: string;
  task: string;
}
export interface SinkTrickCase {
  task: string;
  trusted: TrustedValues;
  sinkKind: "url" | "email" | "domain" | "host" | "phone";
  value: string | string[];
}
export interface TrustedTargets {
  hosts: Set<string | undefined>;
  registrable: Set<string>;
  emails: Set<string>;
  phones: Set<string | undefined>;
  urls: Set<string>;
}
export declare const trustedBase: Arbitrary<unknown>;
export declare function trustedOf(base: unknown): TrustedValues;
export declare const sinkTrickCase: Arbitrary<SinkTrickCase>;
export declare function trustedTargets(trusted: TrustedValues): TrustedTargets;
export declare function untrustedReach(
  sinkKind: SinkTrickCase["sinkKind"],
  value: string | string[],
  targets: TrustedTargets,
): string[];

/** The sinks the parser-differential suite and bench guard: one per argument kind. */
export declare const trickSinks: Array<{
  tool: string;
  args: Record<string, "url" | "email" | "domain" | "host" | "phone">;
  require: "trusted";
}>;
/** The tool and argument each kind of case is sent to. */
export declare const trickToolOf: {
  readonly url: readonly ["http_post", "url"];
  readonly email: readonly ["send_email", "to"];
  readonly domain: readonly ["allow_domain", "domain"];
  readonly host: readonly ["connect", "host"];
  readonly phone: readonly ["call_phone", "phone"];
};
