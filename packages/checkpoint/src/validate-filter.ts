import type { ListFilter } from "@loopguard/core";
import { validateListFilter } from "@loopguard/core/plugin";

/** Checks a ListFilter, so a typo is an error rather than an unfiltered list (core's checks, `[checkpoint]` errors). */
export function validateFilter(filter: ListFilter): void {
  validateListFilter(filter, "checkpoint");
}
