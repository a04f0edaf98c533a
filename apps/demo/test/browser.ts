import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";
import { expect } from "vitest";

/** Debian's Chromium (or CHROMIUM_PATH): the browser every page test drives. */
export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const hasChromium = existsSync(chromiumPath);

/**
 * Starts headless Chromium as this machine allows it: no sandbox (tests run as root), and no
 * background networking (the machine's closed network refuses those connections).
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** Polls with room for a loaded CI machine (vitest's default gives up after 1 s). */
export function eventually<T>(
  fn: () => T | Promise<T>,
  options: { timeout?: number } = {},
): ReturnType<typeof expect.poll> {
  return expect.poll(fn, { timeout: 60_000, ...options });
}
