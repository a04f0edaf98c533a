import { describe, expect, it } from "vitest";
import { compileWindow } from "./time-window.js";

const at = (iso: string) => Date.parse(iso);

describe("time windows", () => {
  it("reads the local time of the zone, across daylight saving changes", () => {
    const paris = compileWindow(
      { start: "09:00", end: "17:00", timeZone: "Europe/Paris" },
      "window",
    );
    // Winter: UTC+1.
    expect(paris.contains(at("2026-01-15T07:59:00Z"))).toBe(false);
    expect(paris.contains(at("2026-01-15T08:00:00Z"))).toBe(true);
    expect(paris.contains(at("2026-01-15T15:59:00Z"))).toBe(true);
    expect(paris.contains(at("2026-01-15T16:00:00Z"))).toBe(false);
    // Summer: UTC+2.
    expect(paris.contains(at("2026-07-15T07:00:00Z"))).toBe(true);
    expect(paris.contains(at("2026-07-15T06:59:00Z"))).toBe(false);
    expect(paris.contains(at("2026-07-15T15:00:00Z"))).toBe(false);
    const newYork = compileWindow(
      { start: "09:00", end: "17:00", timeZone: "America/New_York" },
      "window",
    );
    expect(newYork.contains(at("2026-01-15T14:00:00Z"))).toBe(true);
    expect(newYork.contains(at("2026-01-15T13:59:00Z"))).toBe(false);
  });

  it("wraps past midnight, and the night belongs to the day it starts on", () => {
    const night = compileWindow(
      { days: ["fri"], start: "22:00", end: "06:00", timeZone: "UTC" },
      "window",
    );
    expect(night.contains(at("2026-12-04T21:59:00Z"))).toBe(false); // Friday 21:59
    expect(night.contains(at("2026-12-04T22:00:00Z"))).toBe(true); // Friday 22:00
    expect(night.contains(at("2026-12-05T03:00:00Z"))).toBe(true); // Saturday 03:00, Friday's night
    expect(night.contains(at("2026-12-05T06:00:00Z"))).toBe(false); // Saturday 06:00
    expect(night.contains(at("2026-12-05T23:00:00Z"))).toBe(false); // Saturday 23:00
    expect(night.contains(at("2026-12-04T03:00:00Z"))).toBe(false); // Friday 03:00 is Thursday's night
  });

  it("wraps past midnight in a zone that is a day ahead of UTC", () => {
    const tokyoNight = compileWindow(
      { days: ["mon"], start: "23:00", end: "01:00", timeZone: "Asia/Tokyo" },
      "window",
    );
    // Monday 23:30 in Tokyo is Monday 14:30 UTC; Tuesday 00:30 in Tokyo is Monday 15:30 UTC.
    expect(tokyoNight.contains(at("2026-11-30T14:30:00Z"))).toBe(true);
    expect(tokyoNight.contains(at("2026-11-30T15:30:00Z"))).toBe(true);
    expect(tokyoNight.contains(at("2026-11-30T16:30:00Z"))).toBe(false);
    expect(tokyoNight.contains(at("2026-11-29T15:30:00Z"))).toBe(false); // Monday 00:30 Tokyo: Sunday's night
  });

  it("covers the whole day with 00:00 to 24:00", () => {
    const day = compileWindow({ days: ["sun"], start: "00:00", end: "24:00" }, "window");
    expect(day.contains(at("2026-11-29T00:00:00Z"))).toBe(true);
    expect(day.contains(at("2026-11-29T23:59:59Z"))).toBe(true);
    expect(day.contains(at("2026-11-30T00:00:00Z"))).toBe(false);
  });

  it("rejects bad days", () => {
    expect(() =>
      compileWindow({ days: ["monday" as never], start: "09:00", end: "17:00" }, "window"),
    ).toThrow(/"monday" is not a day/);
  });
});
