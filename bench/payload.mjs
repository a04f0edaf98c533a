// The tool output of the loop benchmarks: a page of plain prose (no personal data, no
// injection), so redaction and scanning do their ordinary work rather than a best or worst case.
const paragraph =
  "Section 4.2 of the handbook explains how returns are processed for orders shipped within the European Union. " +
  "Customers may return any item within thirty days of delivery, provided the packaging is intact and the receipt is attached. " +
  "The warehouse checks each parcel on arrival and the refund goes back to the original payment method within five business days. ";

/** A page of prose exactly `bytes` long (ASCII). */
export function prosePage(bytes) {
  return paragraph.repeat(Math.ceil(bytes / paragraph.length)).slice(0, bytes);
}
