import type { RunResult, StoredEvent } from "@loopguard/core";
import type { SideEffect } from "@loopguard/evals";
import type pc from "picocolors";

type Colors = ReturnType<typeof pc.createColors>;

const clip = (text: string, max = 160) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** The text inside a quarantine envelope (`<tool_output ...>`, a notice line, the text), for display. */
const unwrapped = (content: string): string => {
  const match = /^<tool_output\b[^>]*>\n[^\n]*\n([\s\S]*?)\n?<\/tool_output>\s*$/.exec(content);
  return match ? match[1]! : content;
};

/** Prints each event of a run as one or two coloured lines, as it becomes durable. */
export function narrator(
  colors: Colors,
  write: (line: string) => void,
): (event: StoredEvent) => void {
  return (event) => {
    switch (event.type) {
      case "run-start":
        write(
          `${colors.bold(colors.cyan("▶ run"))} ${event.runId}  ${colors.dim(`model ${event.model}, policy ${event.policyDigest.slice(0, 12)}`)}`,
        );
        write(`  ${colors.dim("task:")} ${clip(event.task)}`);
        break;
      case "run-resume":
        write(`${colors.bold(colors.cyan("↺ resumed"))} from event ${event.fromSeq}`);
        break;
      case "model-response": {
        const usage = event.response.usage;
        write(
          `${colors.magenta(`● step ${event.step}`)} ${colors.dim(`${usage.input_tokens} in / ${usage.output_tokens} out tokens, $${event.costUsd.toFixed(5)}`)}`,
        );
        for (const block of event.response.content) {
          if (block.type === "text" && block.text.trim() !== "")
            write(`  ${colors.white("model:")} ${clip(block.text)}`);
          if (block.type === "tool_use")
            write(
              `  ${colors.blue("→ wants")} ${block.name}(${clip(JSON.stringify(block.input), 120)})`,
            );
        }
        break;
      }
      case "model-retry":
        write(
          `  ${colors.yellow("↻ retry")} ${event.kind}${event.status ? ` ${event.status}` : ""} in ${event.waitMs} ms`,
        );
        break;
      case "model-error":
        write(`  ${colors.red("✗ model error")} ${event.message}`);
        break;
      case "tool-call-intent":
        write(
          `  ${colors.green("✓ allowed")} ${event.tool} ${colors.dim(`[${event.decision.passed.join(" ")}] key ${event.idempotencyKey}`)}`,
        );
        break;
      case "tool-call-refusal":
        write(
          `  ${colors.bold(colors.red(`✗ BLOCKED ${event.tool}`))} ${colors.red(`${event.decision.reason} at ${event.decision.refusedAt}`)}${event.decision.halted ? colors.red(" (halts the run)") : ""}`,
        );
        write(`    ${colors.dim(clip(event.decision.message ?? "", 200))}`);
        break;
      case "tool-call-result": {
        const scan =
          event.scan && event.scan.verdict !== "clean"
            ? colors.yellow(` ⚠ scanner: ${event.scan.verdict} (${event.scan.rules.join(", ")})`)
            : "";
        const status =
          event.status === "ok"
            ? colors.green("← ok")
            : colors.red(`← ${event.errorKind ?? "error"}`);
        write(
          `  ${status} ${event.tool} ${colors.dim(`${event.durationMs} ms, ${event.attempts} attempt${event.attempts === 1 ? "" : "s"}`)}${scan}`,
        );
        write(`    ${colors.dim(clip(unwrapped(event.content), 140))}`);
        break;
      }
      case "approval-request":
        write(
          `  ${colors.yellow(`⏸ approval needed for ${event.tool}`)} ${colors.dim(`(${event.reason}: ${clip(event.message, 100)}) request ${event.requestId}`)}`,
        );
        break;
      case "approval-decision":
        write(
          `  ${event.decision === "approve" ? colors.green("✓ approved") : colors.red(`✗ ${event.decision}`)}${event.approver ? ` by ${event.approver}` : ""}`,
        );
        break;
      case "run-halt":
        write(
          `  ${colors.bold(colors.red(`■ run halted: ${event.reason}`))} ${colors.dim(`(${event.source})`)}`,
        );
        break;
      case "run-end":
        write(
          `${colors.bold(event.status === "completed" ? colors.green("■ run ended") : colors.yellow("■ run ended"))} ${event.status} (${event.why})`,
        );
        break;
      default:
        break;
    }
  };
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
  lines.push(
    `${colors.bold("status")}   ${statusColor(result.status)} (${result.why})${result.haltReason ? ` halt: ${result.haltReason}` : ""}`,
  );
  lines.push(`${colors.bold("steps")}    ${result.steps}`);
  lines.push(`${colors.bold("tokens")}   ${result.tokens.input} in / ${result.tokens.output} out`);
  lines.push(`${colors.bold("cost")}     $${result.costUsd.toFixed(5)}`);
  lines.push(`${colors.bold("blocked")}  ${result.blocked.length === 0 ? "none" : ""}`);
  for (const call of result.blocked)
    lines.push(
      `  ${colors.red("✗")} ${call.tool}: ${call.reason} at ${call.decision.refusedAt} — ${clip(call.message, 90)}`,
    );
  const refunds = effects.filter((effect) => effect.kind === "refund");
  const emails = effects.filter((effect) => effect.kind === "email");
  lines.push(
    `${colors.bold("refunds")}  ${refunds.length === 0 ? "none" : refunds.map((effect) => `${effect.payload.order_id} $${effect.payload.amount}`).join(", ")}`,
  );
  lines.push(
    `${colors.bold("emails")}   ${emails.length === 0 ? "none" : emails.map((effect) => String(redact(String(effect.payload.to)))).join(", ")}`,
  );
  if (result.pendingApprovals)
    for (const pending of result.pendingApprovals)
      lines.push(
        `${colors.yellow("waiting")}  ${pending.tool} — answer with: loopguard approve ${result.runId} [--deny] --as NAME`,
      );
  if (result.answer)
    lines.push(`${colors.bold("answer")}   ${clip(String(redact(result.answer)), 100)}`);
  const width = Math.max(...lines.map((line) => visible(line).length)) + 2;
  const top = `┌${"─".repeat(width)}┐`;
  const bottom = `└${"─".repeat(width)}┘`;
  return [
    top,
    ...lines.map((line) => `│ ${line}${" ".repeat(width - 1 - visible(line).length)}│`),
    bottom,
  ].join("\n");
}

// Strips ANSI colour codes to measure width.
const visible = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, "");
