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
