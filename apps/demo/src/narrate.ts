import type { RunResult, StoredEvent } from "@loopguard/core";
import type { SideEffect } from "@loopguard/evals";
import type pc from "picocolors";
import { invocation } from "./invocation.js";
import { fitLine, terminalWidth, visibleWidth, wrapText } from "./terminal-width.js";

type Colors = ReturnType<typeof pc.createColors>;

const clip = (text: string, max = 160) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** A cost in US dollars, rounded for people (4 decimals; the log keeps the exact figure). */
export const usd = (value: number): string => `$${value.toFixed(4)}`;

/** The text inside a quarantine envelope (`<tool_output ...>`, a notice line, the text), for display. */
const unwrapped = (content: string): string => {
  const match = /^<tool_output\b[^>]*>\n[^\n]*\n([\s\S]*?)\n?<\/tool_output>\s*$/.exec(content);
  return match ? match[1]! : content;
};

/** What each step of the gate pipeline checks, in words (the decision record names them `step:name`). */
const stepWords: Record<string, string> = {
  kill_switch: "kill switch",
  run_halted: "halt latch",
  validation: "argument schema",
  policy: "policy",
  rate_limit: "rate limit",
  run_loop: "loop check",
  taint: "taint",
  approval: "approval",
  circuit_breaker: "circuit breaker",
  budget: "budget",
};

/** The checks a call passed, each named once (the halt latch is checked first and last). */
export function passedChecks(passed: readonly string[]): string {
  const names = [...new Set(passed.map((step) => step.replace(/^[\d.]+:/, "")))];
  return names.map((name) => stepWords[name] ?? name).join(", ");
}

/** Why a call was refused, in words, by reason code. */
const refusalWords: Record<string, string> = {
  policy_deny: "a deny rule of the policy matched",
  kill_switch: "the fleet is frozen (loopguard freeze)",
  run_halted: "this run was halted earlier; every later call is refused",
  tainted_argument: "an argument came from text the injection scanner flagged",
  approval_denied: "a person refused it",
  approval_timeout: "nobody answered the approval in time",
  policy_indeterminate: "the approval's answer could not be read, so the run fails closed",
  loop_detected: "the same calls kept repeating",
  budget_exceeded: "the run cannot afford it",
  invalid_arguments: "its arguments do not fit the tool's schema",
  rate_limited: "the tool's rate limit is used up",
  circuit_open: "the tool kept failing, so its circuit breaker is open",
};

/** Why a run ended, in words, by `why`. */
const endWords: Record<string, string> = {
  end_turn: "the model finished its answer",
  budget: "a budget cap was reached before the next model call",
  maxUsd: "the next model call could cross the USD cap",
  maxSteps: "the step cap was reached",
  maxTokens: "the token cap was reached",
  wall_clock: "the wall-clock cap was reached",
  halted: "the run was halted",
  awaiting_approval: "a call waits for a person",
  max_tokens: "the model hit max_tokens",
  refusal: "the model refused",
  error: "an error ended it",
};

const tokenPattern = /<([A-Z_]+)_\d+>/g;

/**
 * Prints each event of a run as it becomes durable, in lines that say what happened and why,
 * for someone who has never read the docs. Each event is one line cut to `width` (default: the
 * terminal's, `COLUMNS`, else 80); the few explanations (printed once) wrap.
 */
export function narrator(
  colors: Colors,
  write: (line: string) => void,
  options: { width?: number } = {},
): (event: StoredEvent) => void {
  const width = options.width ?? terminalWidth();
  const clipped = write;
  write = (line: string) => clipped(fitLine(line, width));
  const explain = (label: string, text: string) => {
    const lines = wrapText(`${label} ${text}`, width, "      ");
    lines[0] = `    ${lines[0]!.trimStart()}`;
    for (const line of lines) clipped(colors.dim(line));
  };
  let explainedTokens = false;
  let explainedScanner = false;
  let explainedChecks = false;
  const explainTokens = (text: string) => {
    if (explainedTokens) return;
    const kinds = [...new Set([...text.matchAll(tokenPattern)].map((match) => match[1]!))];
    if (kinds.length === 0) return;
    explainedTokens = true;
    explain(
      "🔒 redacted:",
      `personal data (${kinds.join(", ").toLowerCase()}) shows as tokens such as <${kinds[0]}_1>; the log, traces and this screen never hold the real value, which stays in the run's 0600 vault file and is revealed only to tools that need it`,
    );
  };
  return (event) => {
    switch (event.type) {
      case "run-start":
        write(
          `${colors.bold(colors.cyan("▶ run"))} ${event.runId} started ${colors.dim(`(model ${event.model}, scripted offline: no API key needed; policy digest ${event.policyDigest.slice(0, 12)})`)}`,
        );
        write(`  ${colors.dim("customer:")} ${clip(event.task)}`);
        break;
      case "run-resume":
        write(
          `${colors.bold(colors.cyan("↺ resumed"))} from event ${event.fromSeq} of the log ${colors.dim("(finished tool calls are reused, not repeated)")}`,
        );
        break;
      case "model-response": {
        const usage = event.response.usage;
        write(
          `${colors.magenta(`● step ${event.step}:`)} the model answered ${colors.dim(`(${usage.input_tokens} tokens in, ${usage.output_tokens} out, ${usd(event.costUsd)})`)}`,
        );
        // The API adds types: what this version could not read is said, never hidden.
        if (event.skipped && event.skipped.length > 0)
          write(
            `  ${colors.yellow("? not read (a newer API type):")} ${event.skipped.map((skip) => `${skip.kind} ${skip.type}`).join(", ")}`,
          );
        for (const block of event.response.content) {
          if (block.type === "text" && block.text.trim() !== "")
            write(`  ${colors.white("model says:")} ${clip(block.text)}`);
          if (block.type === "tool_use") {
            const input = JSON.stringify(block.input);
            write(`  ${colors.blue("→ model asks to call")} ${block.name}(${clip(input, 120)})`);
            explainTokens(input);
          }
        }
        break;
      }
      case "model-retry":
        write(
          `  ${colors.yellow("↻ retrying the model call")} after ${event.kind}${event.status ? ` ${event.status}` : ""}, in ${event.waitMs} ms`,
        );
        break;
      case "model-error":
        write(`  ${colors.red("✗ the model call failed:")} ${event.message}`);
        break;
      case "tool-call-intent": {
        // One short line per allowed call; what the checks are is said once.
        const checks = new Set(event.decision.passed.map((step) => step.replace(/^[\d.]+:/, "")));
        write(
          `  ${colors.green(`✓ ${event.tool} allowed`)} ${colors.dim(`(${checks.size} checks; logged before it runs)`)}`,
        );
        if (!explainedChecks) {
          explainedChecks = true;
          explain(
            "checks:",
            `${passedChecks(event.decision.passed)}; the idempotency key is ${event.idempotencyKey}`,
          );
        }
        break;
      }
      case "tool-call-refusal": {
        const why = event.decision.reason ? refusalWords[event.decision.reason] : undefined;
        write(
          `  ${colors.bold(colors.red(`✗ ${event.tool} BLOCKED`))} ${colors.red(`(${event.decision.reason} at pipeline step ${event.decision.refusedAt}${why ? `: ${why}` : ""})`)}${event.decision.halted ? colors.red("; this halts the run") : ""}`,
        );
        write(`    ${colors.dim(`told the model: ${clip(event.decision.message ?? "", 200)}`)}`);
        break;
      }
      case "tool-call-result": {
        const status =
          event.status === "ok"
            ? colors.green(`← ${event.tool} returned`)
            : colors.red(`← ${event.tool} failed (${event.errorKind ?? "error"})`);
        write(
          `  ${status} ${colors.dim(`in ${event.durationMs} ms, ${event.attempts} attempt${event.attempts === 1 ? "" : "s"}`)}`,
        );
        const text = unwrapped(event.content);
        write(`    ${colors.dim(clip(text, 140))}`);
        if (event.scan && event.scan.verdict !== "clean") {
          write(
            `    ${colors.yellow(`⚠ injection scanner: ${event.scan.verdict}`)} ${colors.dim(`(rules ${event.scan.rules.join(", ")})`)}`,
          );
          if (!explainedScanner)
            explain(
              "",
              "the text reaches the model fenced as untrusted data, and values taken from it are tainted for sensitive tools",
            );
          explainedScanner = true;
        }
        explainTokens(text);
        break;
      }
      case "approval-request":
        write(
          `  ${colors.yellow(`⏸ ${event.tool} needs a person's approval`)} ${colors.dim(`(${event.reason}: ${clip(event.message, 100)}); the run parks durably, request ${event.requestId}`)}`,
        );
        break;
      case "approval-decision":
        write(
          `  ${event.decision === "approve" ? colors.green("✓ approved") : colors.red(`✗ ${event.decision}`)}${event.approver ? ` by ${event.approver}` : ""} ${colors.dim("(recorded in the log before the call runs)")}`,
        );
        break;
      case "run-halt":
        write(
          `  ${colors.bold(colors.red(`■ run halted: ${event.reason}`))} ${colors.dim(`(by ${event.source}); every later tool call of this run is refused`)}`,
        );
        break;
      case "run-end": {
        const why = endWords[event.why];
        write(
          `${colors.bold(event.status === "completed" ? colors.green("■ run ended:") : colors.yellow("■ run ended:"))} ${event.status}${why ? ` (${why})` : ` (${event.why})`}`,
        );
        break;
      }
      default:
        break;
    }
  };
}

/** The status line of a run: the status and, when it adds something, why in words. */
export function statusWords(result: RunResult): string {
  const words = result.why === result.status ? undefined : (endWords[result.why] ?? result.why);
  const why = words && result.limit ? `${words}: ${result.limit}` : words;
  return `${result.status}${why ? ` (${why})` : ""}${result.haltReason ? ` halt: ${result.haltReason}` : ""}`;
}

/** The summary box at the end of a run: status, steps, tokens, cost, blocked calls, side effects. */
export function summaryBox(
  colors: Colors,
  result: RunResult,
  effects: readonly SideEffect[],
  redact: (value: unknown) => unknown,
): string {
  const lines: string[] = [];
  const statusColor =
    result.status === "completed"
      ? colors.green
      : result.status === "awaiting_approval"
        ? colors.yellow
        : colors.red;
  lines.push(`${colors.bold("run")}      ${result.runId}`);
  lines.push(`${colors.bold("status")}   ${statusColor(statusWords(result))}`);
  lines.push(`${colors.bold("steps")}    ${result.steps} model calls`);
  lines.push(`${colors.bold("tokens")}   ${result.tokens.input} in / ${result.tokens.output} out`);
  lines.push(`${colors.bold("cost")}     ${usd(result.costUsd)}`);
  lines.push(
    `${colors.bold("blocked")}  ${result.blocked.length === 0 ? "none" : `${result.blocked.length} call${result.blocked.length === 1 ? "" : "s"}`}`,
  );
  for (const call of result.blocked)
    lines.push(
      `  ${colors.red("✗")} ${call.tool}: ${call.reason} at step ${call.decision.refusedAt} — ${clip(call.message, 90)}`,
    );
  const refunds = effects.filter((effect) => effect.kind === "refund");
  const emails = effects.filter((effect) => effect.kind === "email");
  lines.push(
    `${colors.bold("refunds")}  ${refunds.length === 0 ? "none paid" : refunds.map((effect) => `${effect.payload.order_id} $${effect.payload.amount}`).join(", ")}`,
  );
  lines.push(
    `${colors.bold("emails")}   ${emails.length === 0 ? "none sent" : emails.map((effect) => String(redact(String(effect.payload.to)))).join(", ")}`,
  );
  if (result.pendingApprovals)
    for (const pending of result.pendingApprovals)
      lines.push(
        `${colors.yellow("waiting")}  ${pending.tool} needs a person; answer with:`,
        `  ${invocation()} approve ${result.runId} [--deny]`,
      );
  // A parked run has no answer yet: what the model said so far is not one.
  if (result.answer && result.status !== "awaiting_approval")
    lines.push(
      `${colors.bold(result.status === "completed" ? "answer" : "partial")}   ${clip(String(redact(result.answer)), 100)}`,
    );
  const room = terminalWidth() - 4;
  for (const [index, line] of lines.entries()) lines[index] = fitLine(line, room);
  const width = Math.max(...lines.map((line) => visibleWidth(line))) + 2;
  const top = `┌${"─".repeat(width)}┐`;
  const bottom = `└${"─".repeat(width)}┘`;
  return [
    top,
    ...lines.map((line) => `│ ${line}${" ".repeat(width - 1 - visibleWidth(line))}│`),
    bottom,
  ].join("\n");
}
