/**
 * A plain-text table: columns as wide as their widest cell, two spaces apart. `line(cells)`
 * formats a row (the header too), `rule` is the dashes under the header.
 */
export function textTable(header: readonly string[], rows: readonly string[][]) {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join("  ")
      .trimEnd();
  const rule = widths.map((width) => "-".repeat(width)).join("  ");
  return { line, rule };
}
