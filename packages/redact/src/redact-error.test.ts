import { describe, expect, it } from "vitest";
import * as errors from "./redact-error.js";

const {
  DetectorError,
  RedactError,
  RedactOptionsError,
  VaultDataError,
  VaultForgottenError,
  VaultKeyError,
} = errors;
const concrete = [
  RedactOptionsError,
  DetectorError,
  VaultKeyError,
  VaultDataError,
  VaultForgottenError,
];

describe("redact's errors (core's scheme, with redact's own base)", () => {
  it("gives each class its own fixed marker and code", () => {
    const markers = Object.values(errors).map((type) => type.marker);
    expect(new Set(markers).size).toBe(Object.values(errors).length);
    for (const type of Object.values(errors))
      expect(type.marker).toBe(`loopguard.error.${type.name}`);
    const codes = concrete.map((type) => new type("[redact] x").code);
    expect(new Set(codes).size).toBe(concrete.length);
  });

  it("recognises a structural copy from another copy of the package, and only for its own class", () => {
    const copy = {
      [Symbol.for("loopguard.error")]: true,
      [Symbol.for(RedactError.marker)]: true,
      [Symbol.for(VaultKeyError.marker)]: true,
    };
    expect(VaultKeyError.isInstance(copy)).toBe(true);
    expect(RedactError.isInstance(copy)).toBe(true);
    expect(VaultDataError.isInstance(copy)).toBe(false);
    expect(VaultKeyError.isInstance({ [Symbol.for(VaultKeyError.marker)]: true })).toBe(false);
    // Called unbound (as a callback), it answers for RedactError.
    const isInstance = VaultDataError.isInstance as (value: unknown) => boolean;
    expect(isInstance(copy)).toBe(true);
    expect(isInstance(new Error("x"))).toBe(false);
  });

  it("names instances from the marker, so a minifier renaming the class changes nothing", () => {
    const Renamed = class extends VaultKeyError {
      static override readonly marker: string = "loopguard.error.TestVaultError";
    };
    Object.defineProperty(Renamed, "name", { value: "q" });
    const error = new Renamed("[redact] no key");
    expect(error.name).toBe("TestVaultError");
    expect(error.code).toBe("vault_key");
    expect(Renamed.isInstance(error)).toBe(true);
    expect(VaultKeyError.isInstance(error)).toBe(true);
    expect(RedactError.isInstance(error)).toBe(true);
    expect(VaultForgottenError.isInstance(error)).toBe(false);
    expect(Renamed.isInstance(new VaultKeyError("[redact] x"))).toBe(false);
    expect(error).toBeInstanceOf(Error);
  });
});
