/**
 * One budget for a tree of runs: a parent and the child runs it starts through `asTool`
 * (and theirs). Each run of the tree has a node; a node's use is its run's committed spend
 * (from its log), the step it holds right now, and the use of its running children. A child's
 * model step reserves its worst case at every ancestor before the call, in one synchronous
 * check, so parallel children can never together pass an ancestor's cap; an ended child's
 * spend moves into its parent's log (`child-run-end`) and its node leaves the tree.
 */
import type { Budget } from "./events.js";
import type { RunFold } from "./fold.js";
import { type ModelPrice, worstCaseCost } from "./pricing.js";
import { type RunBudgetHooks, RunBudgetStop } from "./run-budgets.js";

/** USD, tokens and model steps. */
export interface TreeSpend {
  usd: number;
  tokens: number;
  steps: number;
}

/** The caps a tree shares. */
type TreeCaps = Pick<Budget, "maxUsd" | "maxTokens" | "maxSteps">;

const none = (): TreeSpend => ({ usd: 0, tokens: 0, steps: 0 });

/** A run's place in its budget tree. */
export class BudgetNode {
  readonly parent: BudgetNode | undefined;
  readonly caps: TreeCaps;
  /** The child run this node is for (absent on a root's node). */
  readonly runId: string | undefined;
  readonly #own: () => TreeSpend;
  readonly #children = new Set<BudgetNode>();
  /** The live children that are child runs, by run id (`hasChild` in O(1)). */
  readonly #childRuns = new Map<string, BudgetNode>();
  #held: TreeSpend = none();

  /** `own` reads the run's committed spend (its fold: responses, in-flight estimates, ended children). */
  constructor(caps: TreeCaps, own: () => TreeSpend, parent?: BudgetNode, runId?: string) {
    this.caps = caps;
    this.#own = own;
    this.parent = parent;
    this.runId = runId;
    if (parent) {
      parent.#children.add(this);
      if (runId !== undefined) parent.#childRuns.set(runId, this);
    }
  }

  /** What this run and its running children use now (committed plus held). */
  used(): TreeSpend {
    const own = this.#own();
    let usd = own.usd + this.#held.usd;
    let tokens = own.tokens + this.#held.tokens;
    let steps = own.steps + this.#held.steps;
    for (const child of this.#children) {
      const use = child.used();
      usd += use.usd;
      tokens += use.tokens;
      steps += use.steps;
    }
    return { usd, tokens, steps };
  }

  /** What is left under this node's caps and every ancestor's (`Infinity` where none caps it). */
  left(fromSelf = true): TreeSpend {
    let usd = Number.POSITIVE_INFINITY;
    let tokens = Number.POSITIVE_INFINITY;
    let steps = Number.POSITIVE_INFINITY;
    for (let node = fromSelf ? this : this.parent; node; node = node.parent) {
      const caps = node.caps;
      if (caps.maxUsd === undefined && caps.maxTokens === undefined && caps.maxSteps === undefined)
        continue;
      const use = node.used();
      if (caps.maxUsd !== undefined) usd = Math.min(usd, caps.maxUsd - use.usd);
      if (caps.maxTokens !== undefined) tokens = Math.min(tokens, caps.maxTokens - use.tokens);
      if (caps.maxSteps !== undefined) steps = Math.min(steps, caps.maxSteps - use.steps);
    }
    return { usd, tokens, steps };
  }

  /** Holds a step's worst case (it counts in every ancestor's use until `release`). */
  hold(spend: TreeSpend): void {
    this.#held = {
      usd: this.#held.usd + spend.usd,
      tokens: this.#held.tokens + spend.tokens,
      steps: this.#held.steps + spend.steps,
    };
  }

  /** Releases what `hold` took (the step's real cost is in the run's log by then). */
  release(): void {
    this.#held = none();
  }

  /** Whether a child run of this node's run is live in the tree (has its own node). */
  hasChild(runId: string): boolean {
    return this.#childRuns.has(runId);
  }

  /** Takes the node out of its parent's use (its spend is in the parent's log now). */
  detach(): void {
    if (!this.parent) return;
    this.parent.#children.delete(this);
    if (this.runId !== undefined && this.parent.#childRuns.get(this.runId) === this)
      this.parent.#childRuns.delete(this.runId);
  }
}

/** Each run's node, by its fold (the run as this process holds it). */
const nodes = new WeakMap<RunFold, BudgetNode>();

/**
 * The node of a run, made (as a root) the first time a child asks for it. A child its log
 * started and no live node holds counts at its caps (see `foldSpend`).
 */
export function nodeOf(fold: RunFold): BudgetNode {
  let node = nodes.get(fold);
  if (!node) {
    const root: BudgetNode = new BudgetNode(fold.start.budget, () => foldSpend(fold, root));
    node = root;
    nodes.set(fold, node);
  }
  return node;
}

/**
 * USD a run may still spend counting its tree: its own cap and every ancestor's, less what the
 * run and its running children use. `undefined` for a run with no node (no tree around it).
 */
export function treeLeftUsd(fold: RunFold): number | undefined {
  return nodes.get(fold)?.left().usd;
}

/**
 * What a run may still spend counting its tree (USD and tokens): its own caps and every
 * ancestor's, less what the run and its running children use. `undefined` for a run with no
 * node, or whose node is a root (nothing above it: its own caps are checked by the loop).
 */
export function treeLeft(fold: RunFold): TreeSpend | undefined {
  const node = nodes.get(fold);
  return node?.parent ? node.left() : undefined;
}

/** Gives a child run's fold its node (made before the fold existed). */
export function attachNode(fold: RunFold, node: BudgetNode): void {
  nodes.set(fold, node);
}

/**
 * A run's committed spend as its fold holds it. With the run's `node`, a child the log started
 * and has not ended, and that has no live node in this process (a resumed parent that has not
 * reopened it yet), counts at its caps: it may have spent up to them before the crash, and its
 * siblings must not step against an ancestor that looks richer than it is.
 */
export function foldSpend(fold: RunFold, node?: BudgetNode): TreeSpend {
  const spend = fold.state.spend;
  let usd = fold.committedUsd;
  let tokens = spend.inputTokens + spend.outputTokens;
  // A step in flight is held by the node (`hold`); one sent before a crash is sent again under
  // the same step number, so it is one step.
  let steps = fold.treeSteps;
  if (node)
    for (const child of fold.pendingTurn?.children?.values() ?? []) {
      if (child.end || node.hasChild(child.start.childRunId)) continue;
      usd += child.start.budget.maxUsd ?? 0;
      tokens += child.start.budget.maxTokens ?? 0;
      steps += child.start.budget.maxSteps ?? 0;
    }
  return { usd, tokens, steps };
}

/** A child's caps as spend: what a child the log started may have used before a crash. */
export function capsSpend(caps: TreeCaps): TreeSpend {
  return { usd: caps.maxUsd ?? 0, tokens: caps.maxTokens ?? 0, steps: caps.maxSteps ?? 0 };
}

/**
 * The caps of a child run: its own budget, each money, token and step cap shrunk to `share` of
 * what the parent (and every ancestor) has left when the call starts (of a `split`-th of it,
 * when that many calls of the turn share it: children run elsewhere), and its wall clock to
 * what is left of the parent's. `exhausted` when nothing is left to give.
 */
export function childCaps(
  own: Budget,
  share: number,
  parent: BudgetNode,
  parentFold: RunFold,
  now: number,
  split = 1,
): { budget: Budget } | { exhausted: string } {
  const whole = parent.left();
  // What this child may take: its part when `split` calls share what is left.
  const left = { usd: whole.usd / split, tokens: whole.tokens / split, steps: whole.steps / split };
  const budget: Budget = { ...own };
  if (Number.isFinite(left.usd)) {
    const give = share * left.usd;
    if (!(give > 0))
      return {
        exhausted: `the parent run has $${Math.max(0, whole.usd).toFixed(4)} left${parts(split)}`,
      };
    budget.maxUsd = Math.min(own.maxUsd ?? give, give);
  }
  if (Number.isFinite(left.tokens)) {
    const give = Math.floor(share * left.tokens);
    if (!(give >= 1))
      return {
        exhausted: `the parent run has ${Math.max(0, whole.tokens)} tokens left${parts(split)}`,
      };
    budget.maxTokens = Math.min(own.maxTokens ?? give, give);
  }
  if (Number.isFinite(left.steps)) {
    const give = Math.floor(share * left.steps);
    if (!(give >= 1))
      return {
        exhausted: `the parent run has ${Math.max(0, whole.steps)} model steps left${parts(split)}`,
      };
    budget.maxSteps = Math.min(own.maxSteps ?? give, give);
  }
  const wall = parentFold.start.budget.wallClockMs;
  if (wall !== undefined) {
    const give = Math.floor(wall - parentFold.activeMs(now));
    if (!(give >= 1)) return { exhausted: "the parent run's wall clock has run out" };
    budget.wallClockMs = Math.min(own.wallClockMs ?? give, give);
  }
  return { budget };
}

/** How a refusal names the split of what is left between the calls of one turn. */
function parts(split: number): string {
  return split > 1 ? ` for ${split} delegated calls that run elsewhere` : "";
}

/**
 * The loop's hooks that keep a child run's model steps inside every ancestor's budget: before
 * a step, `max_tokens` shrinks to what the ancestors have left and the step's worst case is
 * held at once (no await between the check and the hold); after it, the hold is released.
 * A run without a node (a root) is not touched. `inner` are the agent's own run budgets.
 */
export function treeBudgetHooks(inner: RunBudgetHooks | undefined): RunBudgetHooks {
  return {
    atDrive: (writer) => inner?.atDrive(writer) ?? Promise.resolve(),
    async beforeStep(writer, step, planned, price) {
      const node = nodes.get(writer.fold);
      let fitted = planned;
      if (node?.parent) fitted = fitStep(node, planned, price);
      try {
        return inner ? await inner.beforeStep(writer, step, fitted, price) : fitted;
      } catch (error) {
        node?.release();
        throw error;
      }
    },
    async afterStep(writer, step) {
      nodes.get(writer.fold)?.release();
      await inner?.afterStep(writer, step);
    },
    async afterDrive(writer) {
      nodes.get(writer.fold)?.release();
      await inner?.afterDrive(writer);
    },
  };
}

/** Shrinks a step to what the ancestors have left and holds its worst case; refuses when none fits. */
function fitStep(
  node: BudgetNode,
  planned: { maxTokens: number; promptBound: number },
  price: ModelPrice,
): { maxTokens: number; promptBound: number } {
  const { promptBound } = planned;
  let { maxTokens } = planned;
  const left = node.left(false);
  if (!(left.steps >= 1))
    throw new RunBudgetStop(
      "parent_budget",
      `[core] the parent run's budget cannot cover another step of this child run (no model step left of its maxSteps)`,
    );
  if (Number.isFinite(left.tokens)) maxTokens = Math.min(maxTokens, left.tokens - promptBound);
  if (Number.isFinite(left.usd)) {
    const perToken = worstCaseCost(promptBound, 1, price) - worstCaseCost(promptBound, 0, price);
    const base = worstCaseCost(promptBound, 0, price);
    maxTokens = Math.min(maxTokens, Math.floor((left.usd - base) / perToken));
  }
  if (!(maxTokens >= 1))
    throw new RunBudgetStop(
      "parent_budget",
      `[core] the parent run's budget cannot cover another step of this child run (left: $${Math.max(0, left.usd).toFixed(4)}, ${Number.isFinite(left.tokens) ? Math.max(0, left.tokens) : "unlimited"} tokens)`,
    );
  node.hold({
    usd: worstCaseCost(promptBound, maxTokens, price),
    tokens: promptBound + maxTokens,
    steps: 1,
  });
  return { maxTokens, promptBound };
}
