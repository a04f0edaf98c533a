#!/usr/bin/env node
// Builds the loopguard docs site in one command: `npm run docs:build` (or `npm run docs:check`).
// Its scripts are not named `build`, so `turbo run build` (npm test) leaves the site alone.
//
// 1. Collects every README.md of the repository and every page under docs/ into docs/.site,
//    keeping the repository's folder layout (a README.md becomes that folder's index.md), and
//    checks that every relative link points at a file that exists. Links to pages stay links;
//    links to source files become the file's path in code (the site holds pages only).
// 2. Generates the API reference from the packages' JSDoc with TypeDoc (TypeScript 6.0.3: TypeDoc
//    needs the compiler API, which TypeScript 7 does not have) into docs/.site/public/api.
// 3. Builds the site with VitePress 1.x into docs/.site/.vitepress/dist. VitePress fails the build
//    on a link to a page that does not exist.
// 4. With --check, type-checks every TypeScript sample of the pages (```ts blocks) against the
//    packages' sources. A sample that is a fragment on purpose says so in its info string:
//    ```ts fragment  (it is shown, not checked).
//
// Options: --check (also type-check samples), --collect-only (step 1, for `vitepress dev`),
// --no-api (skip TypeDoc), --update-known (with --check: rewrite samples-known-failures.txt).
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, posix, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const docs = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const root = resolve(docs, "..");
const site = join(docs, ".site");
const args = new Set(process.argv.slice(2));
const started = Date.now();

const say = (line) => console.log(`[docs] ${line}`);
const fail = (lines) => {
  for (const line of lines) console.error(`[docs] ${line}`);
  process.exit(1);
};

// ---------------------------------------------------------------------------------------------
// 1. Collect the pages.

const skipDirs = new Set([
  "node_modules",
  "dist",
  ".site",
  ".samples",
  ".git",
  ".turbo",
  ".tools",
  "reports",
  "coverage",
  ".changeset",
  "__fixtures__",
  ".tarballs",
  "tmp",
]);

/** Every markdown page of the site, as repository-relative paths. */
function sourcePages() {
  const pages = [];
  const walk = (dir) => {
    for (const name of readdirSync(join(root, dir))) {
      if (skipDirs.has(name) || name.startsWith(".")) continue;
      const path = dir ? `${dir}/${name}` : name;
      const stat = statSync(join(root, path));
      if (stat.isDirectory()) walk(path);
      else if (name === "README.md" || (path.startsWith("docs/") && name.endsWith(".md")))
        pages.push(path);
    }
  };
  walk("");
  return pages.sort();
}

/** Where a source page lands in the site: `x/README.md` becomes `x/index.md`. */
const sitePath = (source) => source.replace(/(^|\/)README\.md$/, "$1index.md");

/** The title of a page: its first heading. */
const titleOf = (text, fallback) =>
  /^#\s+(.+)$/m.exec(text)?.[1]?.replace(/`/g, "").trim() ?? fallback;

const pages = sourcePages();
const problems = [];
const samples = [];
rmSync(site, { recursive: true, force: true });
mkdirSync(site, { recursive: true });
const titles = new Map();

for (const source of pages) {
  const text = readFileSync(join(root, source), "utf8");
  const fromDir = posix.dirname(source);
  let inFence = false;
  let fence = null;
  const lines = text.split("\n");
  const out = [];
  lines.forEach((line, index) => {
    const fenceMatch = /^(\s*)(```+|~~~+)(.*)$/.exec(line);
    if (fenceMatch) {
      if (!inFence) {
        inFence = true;
        fence = { marker: fenceMatch[2], info: fenceMatch[3].trim(), start: index + 1, body: [] };
      } else if (fenceMatch[2].startsWith(fence.marker[0]) && fenceMatch[3].trim() === "") {
        inFence = false;
        const [lang, ...meta] = fence.info.split(/\s+/);
        if (["ts", "typescript"].includes(lang) && !meta.includes("fragment"))
          samples.push({ source, line: fence.start, code: fence.body.join("\n") });
        fence = null;
      }
      out.push(line);
      return;
    }
    if (inFence) {
      fence.body.push(line);
      out.push(line);
      return;
    }
    out.push(
      line.replace(
        /(!?)\[([^\]]*)\]\(([^)\s]+)(\s+"[^"]*")?\)/g,
        (whole, bang, label, target, title = "") => {
          if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("#")) return whole;
          const [pathPart, anchor] = target.split("#");
          const resolved = posix.normalize(posix.join(fromDir, decodeURI(pathPart)));
          const where = `${source}:${index + 1}`;
          if (resolved.startsWith("..")) {
            problems.push(`${where}: ${target} points outside the repository`);
            return whole;
          }
          const absolute = join(root, resolved);
          if (!existsSync(absolute)) {
            problems.push(`${where}: ${target} does not exist (${resolved})`);
            return whole;
          }
          const isDir = statSync(absolute).isDirectory();
          const page = isDir
            ? pages.includes(`${resolved}/README.md`)
              ? `${resolved}/README.md`
              : undefined
            : pages.includes(resolved)
              ? resolved
              : undefined;
          if (page) {
            const link =
              posix.relative(posix.dirname(sitePath(source)), sitePath(page)) ||
              posix.basename(sitePath(page));
            return `${bang}[${label}](${link.startsWith(".") ? link : `./${link}`}${anchor ? `#${anchor}` : ""}${title})`;
          }
          // A source file or folder: the site holds pages only, so name it in code.
          return `${label}${label.includes(resolved) ? "" : ` (\`${resolved}${isDir ? "/" : ""}\`)`}`;
        },
      ),
    );
  });
  if (inFence) problems.push(`${source}:${fence.start}: a code fence is never closed`);
  const target = join(site, sitePath(source));
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, out.join("\n"));
  titles.set(sitePath(source), titleOf(text, source));
}
if (problems.length > 0)
  fail([`${problems.length} broken link(s):`, ...problems.map((problem) => `  ${problem}`)]);
say(`collected ${pages.length} pages; every relative link resolves`);

// The VitePress config: a sidebar in the repository's order.
const group = (prefix) => [...titles.keys()].filter((path) => path.startsWith(prefix)).sort();
const item = (path) => ({
  text: titles.get(path),
  link: `/${path.replace(/(^|\/)index\.md$/, "$1").replace(/\.md$/, "")}`,
});
const sidebar = [
  { text: "Start", items: [item("index.md"), ...group("apps/").map(item)] },
  {
    text: "Packages",
    items: group("packages/")
      .filter((path) => /^packages\/[^/]+\/index\.md$/.test(path))
      .map(item),
  },
  {
    text: "More on the packages",
    collapsed: true,
    items: group("packages/")
      .filter((path) => !/^packages\/[^/]+\/index\.md$/.test(path))
      .map(item),
  },
  {
    text: "Design",
    items: group("docs/")
      .filter((path) => !path.startsWith("docs/decisions/"))
      .map(item),
  },
  { text: "Decisions", collapsed: true, items: group("docs/decisions/").map(item) },
  {
    text: "Other",
    collapsed: true,
    items: [...titles.keys()]
      .filter((path) => !/^(index\.md|apps\/|packages\/|docs\/)/.test(path))
      .sort()
      .map(item),
  },
].filter((section) => section.items.length > 0);
const withApi = !args.has("--no-api") && !args.has("--collect-only");
mkdirSync(join(site, ".vitepress"), { recursive: true });
writeFileSync(
  join(site, ".vitepress", "config.mjs"),
  `// Written by docs/scripts/build-docs.mjs; do not edit.
export default ${JSON.stringify(
    {
      title: "loopguard",
      description: "Safe, durable tool-using Claude agents",
      cleanUrls: true,
      // Pages are Markdown from the repository: no Vue components in them.
      markdown: { attrs: { disable: true } },
      vue: { template: { compilerOptions: { whitespace: "preserve" } } },
      themeConfig: {
        nav: [
          { text: "Guide", link: "/" },
          { text: "Packages", link: "/packages/core/" },
          ...(withApi ? [{ text: "API", link: "/api/index.html", target: "_self" }] : []),
        ],
        sidebar,
        search: { provider: "local" },
      },
    },
    null,
    2,
  )};
`,
);
if (args.has("--collect-only")) process.exit(0);

// ---------------------------------------------------------------------------------------------
// 2. The API reference.

const entryPoints = [];
for (const group of ["packages"]) {
  for (const name of readdirSync(join(root, group)).sort()) {
    const dir = join(root, group, name);
    if (!existsSync(join(dir, "package.json"))) continue;
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    if (manifest.private) continue;
    for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
      const types = typeof target === "object" && target !== null ? target.types : undefined;
      if (typeof types !== "string") continue;
      const src = join(dir, types.replace(/^\.\/dist\//, "src/").replace(/\.d\.ts$/, ".ts"));
      if (existsSync(src))
        entryPoints.push({
          src,
          name: subpath === "." ? manifest.name : `${manifest.name}/${subpath.slice(2)}`,
        });
    }
  }
}
const paths = {};
// Relative to the generated tsconfig files (docs/.site and docs/.samples: both one level down).
for (const { src, name } of entryPoints) paths[name] = [relative(site, src).split(sep).join("/")];
writeFileSync(
  join(site, "tsconfig.json"),
  JSON.stringify(
    {
      extends: "../../tsconfig.base.json",
      compilerOptions: {
        noEmit: true,
        paths,
        types: ["node"],
        typeRoots: ["../../node_modules/@types"],
        skipLibCheck: true,
      },
      include: [
        ...new Set(
          entryPoints.map(({ src }) =>
            relative(site, join(dirname(src), "**/*.ts"))
              .split(sep)
              .join("/"),
          ),
        ),
      ],
      exclude: ["../../**/*.test.ts", "../../**/*.test-d.ts", "../../**/__fixtures__/**"],
    },
    null,
    2,
  ),
);
if (withApi) {
  const typedoc = [
    join(docs, "node_modules/.bin/typedoc"),
    "--tsconfig",
    join(site, "tsconfig.json"),
    "--out",
    join(site, "public/api"),
    "--name",
    "loopguard API",
    "--readme",
    "none",
    "--skipErrorChecking",
    "--excludePrivate",
    "--excludeInternal",
    "--logLevel",
    "Error",
    "--disableSources",
    ...entryPoints.flatMap(({ src }) => [src]),
  ];
  const result = spawnSync(typedoc[0], typedoc.slice(1), { cwd: docs, stdio: "inherit" });
  if (result.status !== 0) fail([`TypeDoc failed (exit ${result.status})`]);
  say(
    `API reference of ${entryPoints.length} entry points (${entryPoints.map(({ name }) => name).join(", ")})`,
  );
}

// ---------------------------------------------------------------------------------------------
// 3. The site.

const built = spawnSync(join(docs, "node_modules/.bin/vitepress"), ["build", site], {
  cwd: docs,
  stdio: "inherit",
});
if (built.status !== 0)
  fail([`VitePress failed (exit ${built.status}): a dead link is named above`]);
say(`site in ${relative(process.cwd(), join(site, ".vitepress/dist")) || "."}`);

// ---------------------------------------------------------------------------------------------
// 4. The samples.

if (args.has("--check")) {
  const dir = join(docs, ".samples");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // The samples of one page are read in order, as one program (a later sample uses what an
  // earlier one imported or declared): one module per page, imports first. Names a README uses
  // as stand-ins for the reader's own objects (model, tools, orders) come from samples-prelude.d.ts.
  const byPage = new Map();
  for (const sample of samples)
    byPage.set(sample.source, [...(byPage.get(sample.source) ?? []), sample]);
  const files = [];
  for (const [source, pageSamples] of byPage) {
    const name = `${source.replace(/[^A-Za-z0-9]+/g, "_")}.ts`;
    const imports = [];
    const body = [];
    const lineMap = [];
    for (const sample of pageSamples) {
      const lines = sample.code.split("\n");
      // Each sample in a block of its own (two samples may both declare \`agent\`); the block
      // opens on the line of the sample's fence, so line numbers still map back.
      body.push("{");
      lineMap.push(sample.line);
      for (let index = 0; index < lines.length; index += 1) {
        const line = lines[index];
        if (/^import\s/.test(line)) {
          let statement = line;
          let end = index;
          while (
            !/from\s+["'][^"']+["'];?\s*$|^import\s+["'][^"']+["'];?\s*$/.test(statement) &&
            end + 1 < lines.length
          ) {
            end += 1;
            statement += `\n${lines[end]}`;
          }
          imports.push({ statement, line: sample.line + 1 + index });
          index = end;
          continue;
        }
        body.push(line);
        lineMap.push(sample.line + 1 + index);
      }
      body.push("}");
      lineMap.push(sample.line + lines.length + 1);
    }
    // Two samples of a page often import the same names: merge named imports per module (a
    // name imported twice is an error in one module), and keep other statements once.
    const named = new Map();
    const others = [];
    for (const { statement } of imports) {
      const match = /^import\s+(type\s+)?\{([^}]*)\}\s*from\s*(["'][^"']+["']);?\s*$/.exec(
        statement,
      );
      if (!match) {
        if (!others.includes(statement.trim())) others.push(statement.trim());
        continue;
      }
      const key = `${match[1] ? "type " : ""}${match[3]}`;
      const names = named.get(key) ?? new Set();
      for (const name of match[2]
        .split(",")
        .map((part) => part.trim())
        .filter(Boolean))
        names.add(name);
      named.set(key, names);
    }
    for (const [key, names] of named) {
      // A name imported as a value needs no type-only import too.
      const typeOnly = key.startsWith("type ") ? undefined : named.get(`type ${key}`);
      for (const name of names) typeOnly?.delete(name);
    }
    const merged = [
      ...others,
      ...[...named]
        .filter(([, names]) => names.size > 0)
        .map(
          ([key, names]) =>
            `import ${key.startsWith("type ") ? "type " : ""}{ ${[...names].join(", ")} } from ${key.replace(/^type /, "")};`,
        ),
    ];
    const header = [`// ${source}: its TypeScript samples in order`, ...merged];
    const headerLines = header.length;
    // An error in the merged imports points at the page's first import of that module.
    const importLines = header.map((statement) => {
      const module = /from\s*(["'][^"']+["'])/.exec(statement)?.[1];
      return (
        (module && imports.find((entry) => entry.statement.includes(module))?.line) ??
        imports[0]?.line
      );
    });
    writeFileSync(join(dir, name), `${header.join("\n")}\n${body.join("\n")}\nexport {};\n`);
    files.push({
      source,
      name,
      at: (fileLine) =>
        fileLine <= headerLines ? importLines[fileLine - 1] : lineMap[fileLine - headerLines - 1],
    });
  }
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify(
      {
        extends: "../../tsconfig.base.json",
        compilerOptions: {
          noEmit: true,
          paths,
          types: ["node"],
          typeRoots: ["../../node_modules/@types"],
          skipLibCheck: true,
          noUnusedLocals: false,
          // Samples are for readers, so they are checked as a typical strict project compiles
          // them; the repository's two extra strictness flags stay on its own sources.
          exactOptionalPropertyTypes: false,
          noUncheckedIndexedAccess: false,
        },
        include: ["*.ts", "../samples-prelude.d.ts"],
      },
      null,
      2,
    ),
  );
  const tsc = join(root, "node_modules/typescript/bin/tsc");
  const checked = spawnSync(
    process.execPath,
    [tsc, "-p", join(dir, "tsconfig.json"), "--pretty", "false"],
    { cwd: dir, encoding: "utf8" },
  );
  const byFile = new Map(files.map((file) => [file.name, file]));
  // Errors inside the packages' own sources are their tests' business; only the samples count here.
  const errors = `${checked.stdout}${checked.stderr}`
    .split("\n")
    .map((line) => /^([^\\/(]+\.ts)\((\d+),(\d+)\): error (TS\d+: .*)$/.exec(line))
    .filter((match) => match && byFile.has(match[1]))
    .map((match) => {
      const file = byFile.get(match[1]);
      return `${file.source}:${file.at(Number(match[2])) ?? "?"}: ${match[4]}`;
    });
  const known = new Set(
    readFileSync(join(docs, "samples-known-failures.txt"), "utf8")
      .split("\n")
      .filter((line) => line.trim() !== "" && !line.startsWith("#")),
  );
  // Known errors are listed without line numbers, so an edit above a sample does not move them.
  const key = (error) => error.replace(/^([^:]+):[^:]+: /, "$1: ");
  const keys = new Set(errors.map(key));
  if (args.has("--update-known")) {
    const header = readFileSync(join(docs, "samples-known-failures.txt"), "utf8")
      .split("\n")
      .filter((line) => line.startsWith("#"));
    writeFileSync(
      join(docs, "samples-known-failures.txt"),
      `${[...header, ...[...keys].sort()].join("\n")}\n`,
    );
    say(`wrote ${keys.size} known sample error(s) to docs/samples-known-failures.txt`);
    process.exit(0);
  }
  const fresh = errors.filter((error) => !known.has(key(error)));
  const fixed = [...known].filter((error) => !keys.has(error));
  // A known error that is gone is good news, not a failure: its README was fixed.
  if (fixed.length > 0)
    say(
      `${fixed.length} line(s) of docs/samples-known-failures.txt no longer fail (delete them, or run with --update-known):\n${fixed.map((error) => `  ${error}`).join("\n")}`,
    );
  if (fresh.length > 0)
    fail([
      `${fresh.length} type error(s) in the TypeScript samples of the pages (import what a sample uses; a deliberate fragment: \`\`\`ts fragment):`,
      ...fresh.map((error) => `  ${error}`),
    ]);
  if (known.size > 0)
    say(
      `${known.size} known sample error(s) listed in docs/samples-known-failures.txt (to fix in their READMEs)`,
    );
  say(
    `${samples.length} TypeScript samples on ${files.length} pages checked: no type error beyond the known ones`,
  );
}
say(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
