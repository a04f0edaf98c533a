// Where the benches find the public labelled corpus: only where they are told. `--data PATH`
// on the command line, else LOOPGUARD_CORPUS (as `loopguard eval --corpus` reads it); a folder
// means its injection.jsonl. Nothing is read from beside the repository by default, so a fresh
// clone runs the benches and skips the corpus figures with a message.
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

/** The corpus file the caller named, or `undefined` when none was named. Throws when it is missing. */
export function publicCorpusPath(argv = process.argv) {
  const flag = argv.indexOf("--data");
  const named = flag >= 0 ? argv[flag + 1] : process.env.LOOPGUARD_CORPUS;
  if (!named) return undefined;
  const path = resolve(named);
  const file =
    existsSync(path) && statSync(path).isDirectory() ? join(path, "injection.jsonl") : path;
  if (!existsSync(file))
    throw new Error(
      `[injection bench] ${file} does not exist: pass --data with the labelled corpus (a file, or a folder holding injection.jsonl), or set LOOPGUARD_CORPUS`,
    );
  return file;
}

/** The message a bench prints when no corpus was named. */
export const noCorpusMessage =
  "[injection bench] no labelled corpus named: pass --data PATH (a file, or a folder holding injection.jsonl) or set LOOPGUARD_CORPUS to measure on one";
