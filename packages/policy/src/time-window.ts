import { InvalidArgumentError, type JsonValue } from "@loopguard/core";
import { describeValue } from "./predicate.js";

/** A day of the week, as written in time windows. */
export type Weekday = "mon" | "tue" | "wed" | "thu" | "fri" | "sat" | "sun";

/**
 * When a rule applies: from `start` to `end` (24-hour `HH:MM`, `end` may be `24:00`) on the
 * given `days`, in `timeZone` (an IANA zone such as `Europe/Paris`; default `UTC`). A window
 * whose end is before its start wraps past midnight, and belongs to the day it starts on:
 * `{ days: ["fri"], start: "22:00", end: "06:00" }` covers Friday 22:00 to Saturday 06:00.
 */
export interface TimeWindow {
  days?: readonly Weekday[];
  start: string;
  end: string;
  timeZone?: string;
}

/** A compiled time window. */
export interface CompiledWindow {
  /** Whether the instant `epochMs` falls inside the window. */
  contains(epochMs: number): boolean;
  /** The window in words, for messages. */
  readonly description: string;
  /** The window as policy-document JSON. */
  toJSON(): JsonValue;
}

/** The days of the week, Sunday first (the order of `Date.prototype.getDay`). */
export const weekdays: readonly Weekday[] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const shortNames: Record<string, number> = {
  Sun: 0,
  Mon: 1,
  Tue: 2,
  Wed: 3,
  Thu: 4,
  Fri: 5,
  Sat: 6,
};
const formatters = new Map<string, Intl.DateTimeFormat>();

/** The local weekday (0 = Sunday) and minute of the day of an instant in a zone. */
interface LocalTime {
  day: number;
  minute: number;
}

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      weekday: "short",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Reads local time through `Intl`, caching the last minute per zone (a call per minute, not per check). */
function localTimeReader(timeZone: string): (epochMs: number) => LocalTime {
  const formatter = formatterFor(timeZone);
  let cachedMinute = Number.NaN;
  let cached: LocalTime = { day: 0, minute: 0 };
  return (epochMs) => {
    const epochMinute = Math.floor(epochMs / 60_000);
    if (epochMinute === cachedMinute) return cached;
    let day = 0;
    let hour = 0;
    let minute = 0;
    for (const part of formatter.formatToParts(epochMs)) {
      if (part.type === "weekday") day = shortNames[part.value] ?? 0;
      else if (part.type === "hour") hour = Number(part.value) % 24;
      else if (part.type === "minute") minute = Number(part.value);
    }
    cachedMinute = epochMinute;
    cached = { day, minute: hour * 60 + minute };
    return cached;
  };
}

function parseClock(value: unknown, what: string, allow24: boolean): number {
  const match = typeof value === "string" ? /^([01]\d|2[0-4]):([0-5]\d)$/.exec(value) : null;
  const minutes = match ? Number(match[1]) * 60 + Number(match[2]) : Number.NaN;
  if (!match || minutes > 24 * 60 || (minutes === 24 * 60 && !allow24)) {
    throw new InvalidArgumentError(
      `[policy] ${what} must be a 24-hour time "HH:MM" such as "09:00"${allow24 ? ' (or "24:00")' : ""}, got ${describeValue(value)}`,
    );
  }
  return minutes;
}

/**
 * Compiles a time window; an invalid time, day or zone throws a clear error.
 *
 * @example
 * compileWindow({ days: ["mon", "tue", "wed", "thu", "fri"], start: "09:00", end: "17:00", timeZone: "Europe/Paris" })
 */
export function compileWindow(window: TimeWindow, where: string): CompiledWindow {
  if (window === null || typeof window !== "object") {
    throw new InvalidArgumentError(
      `[policy] ${where}: window must be an object such as { start: "09:00", end: "17:00", timeZone: "Europe/Paris" }`,
    );
  }
  const start = parseClock(window.start, `${where}.start`, false);
  const end = parseClock(window.end, `${where}.end`, true);
  if (start === end)
    throw new InvalidArgumentError(
      `[policy] ${where}: start and end are both ${window.start}; a window must not be empty (use "00:00" to "24:00" for the whole day)`,
    );
  const timeZone = window.timeZone ?? "UTC";
  try {
    if (typeof timeZone !== "string") throw new RangeError("not a string");
    formatterFor(timeZone);
  } catch {
    throw new InvalidArgumentError(
      `[policy] ${where}.timeZone: ${describeValue(timeZone)} is not a time zone this Node.js knows; use an IANA name such as "Europe/Paris" or "UTC"`,
    );
  }
  let days: Set<number> | undefined;
  if (window.days !== undefined) {
    if (!Array.isArray(window.days) || window.days.length === 0) {
      throw new InvalidArgumentError(
        `[policy] ${where}.days must be a non-empty array of "mon" ... "sun", got ${describeValue(window.days)}`,
      );
    }
    days = new Set();
    for (const day of window.days) {
      const index = weekdays.indexOf(day);
      if (index < 0)
        throw new InvalidArgumentError(
          `[policy] ${where}.days: ${describeValue(day)} is not a day; use "mon", "tue", "wed", "thu", "fri", "sat" or "sun"`,
        );
      days.add(index);
    }
  }
  const dayList = days ? weekdays.filter((_day, index) => days.has(index)) : undefined;
  const read = localTimeReader(timeZone);
  const wraps = end < start;
  const onDay = (day: number) => days === undefined || days.has(day);
  const json = {
    ...(dayList ? { days: dayList } : {}),
    start: window.start,
    end: window.end,
    timeZone,
  };
  return {
    description: `${dayList ? `${dayList.join(",")} ` : ""}${window.start}-${window.end} ${timeZone}`,
    toJSON: () => json,
    contains(epochMs) {
      const local = read(epochMs);
      if (!wraps) return onDay(local.day) && local.minute >= start && local.minute < end;
      // Wrapping: the evening part belongs to today, the morning part to yesterday's window.
      if (local.minute >= start) return onDay(local.day);
      if (local.minute < end) return onDay((local.day + 6) % 7);
      return false;
    },
  };
}
