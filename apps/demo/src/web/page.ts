import { readFileSync } from "node:fs";

/** What the shell page embeds for the script to render at once. */
export interface PageBoot {
  view: "inbox" | "runs" | "run" | "fleet" | "missing";
  user: string;
  csrf: string;
  where: string;
  data: unknown;
  query?: Record<string, string>;
  /** The state the page was rendered from; the live feed announces any other. */
  version?: string;
}

let script: string | undefined;

/** The page script (the build of `client.ts`), without its source-map comment. */
export function clientScript(): string {
  if (script === undefined) {
    const text = readFileSync(new URL("./client.js", import.meta.url), "utf8");
    script = text.replace(/\n\/\/# sourceMappingURL=.*\s*$/, "\n");
  }
  return script;
}

/** Embeds JSON in a `<script type="application/json">` block that no value can close. */
export function embedJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/** The one HTML shell every page uses: header, nav, a live region and the embedded view. */
export function shellPage(boot: PageBoot, nonce: string, pendingCount: number): string {
  const nav = (href: string, label: string, view: PageBoot["view"]) =>
    `<a href="${href}"${boot.view === view ? ' aria-current="page"' : ""}>${label}</a>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>loopguard</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">${css}</style>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
  <span class="brand">loopguard</span>
  <nav aria-label="Main">
    ${nav("/", `Inbox${pendingCount > 0 ? ` <span class="count" aria-label="${pendingCount} waiting">${pendingCount}</span>` : ""}`, "inbox")}
    ${nav("/runs", "Runs", "runs")}
    ${nav("/fleet", "Fleet", "fleet")}
  </nav>
  <span class="who">Signed in as <strong>${escapeHtml(boot.user)}</strong> · <span class="where">${escapeHtml(boot.where)}</span></span>
</header>
<main id="main" tabindex="-1"><p>Loading…</p></main>
<p id="live" class="sr-only" role="status" aria-live="polite"></p>
<p class="offline-note" role="alert">Lost the live connection to the server: the page may be out of date. It reconnects by itself.</p>
<script type="application/json" id="boot">${embedJson(boot)}</script>
<script type="module" nonce="${nonce}">${clientScript()}</script>
</body>
</html>`;
}

/** A page with no script: the sign-in form, a 401, a 404. */
export function plainPage(title: string, body: string, nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · loopguard</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">${css}</style>
</head>
<body>
<header><span class="brand">loopguard</span></header>
<main id="main">${body}</main>
</body>
</html>`;
}

export { escapeHtml };

// Colours meet WCAG AA contrast on their backgrounds (checked for text at 4.5:1).
const css = `
:root { color-scheme: light; --ink:#1b1f24; --muted:#4f5863; --line:#d5d9de; --bg:#f6f7f9; --card:#fff; --accent:#0b5cad; --ok:#116329; --bad:#a40e26; --warn:#7a4d00; }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:var(--ink); background:var(--bg); }
a { color:var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible { outline:3px solid #f4b400; outline-offset:2px; }
.skip { position:absolute; left:-999px; } .skip:focus { left:8px; top:8px; background:#fff; padding:4px 8px; z-index:2; }
.sr-only { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); }
header { display:flex; flex-wrap:wrap; gap:12px 24px; align-items:center; padding:10px 20px; background:#12263f; color:#fff; }
header a { color:#fff; text-decoration:none; padding:6px 10px; border-radius:6px; }
header a[aria-current="page"] { background:#2b4a70; }
header nav { display:flex; gap:4px; }
.brand { font-weight:700; letter-spacing:.02em; }
.who { margin-left:auto; font-size:13px; color:#dde6f0; }
.count { display:inline-block; min-width:1.6em; padding:0 6px; border-radius:10px; background:#f4b400; color:#1b1f24; font-weight:700; text-align:center; }
main { max-width:1100px; margin:0 auto; padding:16px 20px 48px; }
h1 { font-size:24px; margin:8px 0 12px; } h2 { font-size:18px; margin:24px 0 8px; } h3 { font-size:16px; margin:0 0 6px; } h4 { font-size:13px; margin:10px 0 4px; color:var(--muted); text-transform:uppercase; letter-spacing:.04em; }
.muted, .meta { color:var(--muted); } .meta { font-size:13px; }
.cards { display:grid; gap:14px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:14px 16px; }
.card.expired, .card.stale { border-style:dashed; }
.card.done { border-color:var(--ok); } .card.lost { border-color:var(--bad); }
.card h2 { margin:0 0 6px; font-size:17px; }
.task { margin:0 0 6px; }
.reasons { margin:0; padding-left:18px; }
dl.args { display:grid; grid-template-columns:max-content 1fr; gap:2px 12px; margin:0; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size:13px; }
dl.args dt { color:var(--muted); } dl.args dd { margin:0; overflow-wrap:anywhere; }
pre.args { white-space:pre-wrap; overflow-wrap:anywhere; }
.answer { display:grid; gap:6px; margin-top:10px; }
textarea, input, select { font:inherit; padding:6px 8px; border:1px solid #8a939c; border-radius:6px; background:#fff; color:var(--ink); }
textarea { width:100%; }
.buttons { display:flex; flex-wrap:wrap; gap:8px; align-items:center; }
button { font:inherit; padding:8px 16px; border-radius:6px; border:1px solid #5c6670; background:#fff; color:var(--ink); cursor:pointer; min-height:40px; }
button.approve { background:var(--ok); border-color:var(--ok); color:#fff; }
button.deny { background:var(--bad); border-color:var(--bad); color:#fff; }
button:disabled { opacity:.6; cursor:default; }
.result { min-height:1.2em; font-weight:600; }
.why-not { color:var(--warn); }
.banner { background:#fdecee; border:1px solid var(--bad); color:var(--bad); padding:10px 12px; border-radius:8px; font-weight:600; }
.ok { background:#e8f5ec; border:1px solid var(--ok); color:var(--ok); padding:10px 12px; border-radius:8px; }
.empty { padding:24px; text-align:center; background:var(--card); border:1px dashed var(--line); border-radius:10px; }
.filters { display:flex; flex-wrap:wrap; gap:8px; align-items:center; margin-bottom:12px; }
.table-wrap { overflow-x:auto; background:var(--card); border:1px solid var(--line); border-radius:10px; }
table { border-collapse:collapse; width:100%; font-size:14px; }
caption { text-align:left; padding:8px 12px; color:var(--muted); }
th, td { text-align:left; padding:8px 12px; border-top:1px solid var(--line); vertical-align:top; }
td.num { text-align:right; font-variant-numeric: tabular-nums; }
td.task { max-width:360px; }
.badge { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px; font-weight:600; background:#e4e8ec; color:var(--ink); white-space:nowrap; }
.s-completed { background:#dff3e4; color:var(--ok); } .s-failed, .s-halted { background:#fbe3e6; color:var(--bad); }
.s-awaiting_approval, .s-awaiting_child { background:#fff1c9; color:var(--warn); } .s-stopped { background:#eceff2; }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:4px 16px; background:var(--card); border:1px solid var(--line); border-radius:10px; padding:12px 16px; }
dl.facts dt { color:var(--muted); } dl.facts dd { margin:0; overflow-wrap:anywhere; }
iframe.trace { width:100%; height:640px; border:1px solid var(--line); border-radius:10px; background:#fff; }
.offline-note { display:none; position:fixed; bottom:0; left:0; right:0; margin:0; padding:8px 16px; background:var(--warn); color:#fff; }
body.offline .offline-note { display:block; }
form.login { display:grid; gap:8px; max-width:420px; }
@media (max-width: 640px) {
  header { padding:8px 12px; } .who { margin-left:0; width:100%; }
  main { padding:12px; }
  th:nth-child(3), td:nth-child(3), th:nth-child(7), td:nth-child(7) { display:none; }
  dl.args, dl.facts { grid-template-columns:1fr; }
  iframe.trace { height:480px; }
}
`;
