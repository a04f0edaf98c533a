/**
 * How wide the CLI's lines may be: `COLUMNS` when it holds a usable width (20 or more), else the
 * terminal's width when standard output is one, else 80 (a pipe, a file, CI).
 */
export function terminalWidth(
  env: NodeJS.ProcessEnv = process.env,
  stream: { isTTY?: boolean; columns?: number } = process.stdout,
): number {
  const fromEnv = Number(env.COLUMNS);
  if (Number.isInteger(fromEnv) && fromEnv >= 20) return fromEnv;
  if (stream.isTTY && typeof stream.columns === "number" && stream.columns >= 20)
    return stream.columns;
  return 80;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes start with ESC.
const ansi = /\u001b\[[0-9;]*m/g;

/** The characters a line shows (colour codes do not count; each code point counts once). */
export function visibleWidth(text: string): number {
  return Array.from(text.replace(ansi, "")).length;
}

/**
 * The line cut to `width` visible characters with `…` at the end when it was longer; colour
 * codes are kept (and reset after a cut).
 */
export function fitLine(text: string, width: number): string {
  if (visibleWidth(text) <= width) return text;
  let out = "";
  let shown = 0;
  let coloured = false;
  for (const part of text.split(/(\u001b\[[0-9;]*m)/)) {
    if (part.startsWith("\u001b[")) {
      out += part;
      coloured = true;
      continue;
    }
    for (const character of part) {
      if (shown >= width - 1) return `${out}…${coloured ? "\u001b[0m" : ""}`;
      out += character;
      shown += 1;
    }
  }
  return out;
}

/**
 * Plain text wrapped at spaces to `width` columns, each line starting with `indent`. A word
 * longer than a line (a path, a command) stays whole on a line of its own.
 */
export function wrapText(text: string, width: number, indent = ""): string[] {
  const room = Math.max(10, width - visibleWidth(indent));
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line === "") line = word;
    else if (visibleWidth(line) + 1 + visibleWidth(word) <= room) line += ` ${word}`;
    else {
      lines.push(indent + line);
      line = word;
    }
  }
  if (line !== "") lines.push(indent + line);
  return lines;
}
