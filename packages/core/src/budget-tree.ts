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

/** USD and tokens. */
export interface TreeSpend {
  usd: number;
  tokens: number;
}

/** A run's place in its budget tree. */
export class BudgetNode {
  readonly parent: BudgetNode | undefined;
  readonly caps: Pick<Budget, "maxUsd" | "maxTokens">;
  readonly #own: () => TreeSpend;
  readonly #children = new Set<BudgetNode>();
  #held: TreeSpend = { usd: 0, tokens: 0 };

  /** `own` reads the run's committed spend (its fold: responses, in-flight estimates, ended children). */
  constructor(
    caps: Pick<Budget, "maxUsd" | "maxTokens">,
    own: () => TreeSpend,
    parent?: BudgetNode,
  ) {
    this.caps = caps;
    this.#own = own;
    this.parent = parent;
    if (parent) parent.#children.add(this);
  }

  /** What this run and its running children use now (committed plus held). */
  used(): TreeSpend {
    const own = this.#own();
    let usd = own.usd + this.#held.usd;
    let tokens = own.tokens + this.#held.tokens;
    for (const child of this.#children) {
      const use = child.used();
      usd += use.usd;
      tokens += use.tokens;
    }
    return { usd, tokens };
  }

  /** What is left under this node's caps and every ancestor's (`Infinity` where none caps it). */
  left(fromSelf = true): TreeSpend {
    let usd = Number.POSITIVE_INFINITY;
    let tokens = Number.POSITIVE_INFINITY;
    for (let node = fromSelf ? this : this.parent; node; node = node.parent) {
      if (node.caps.maxUsd === undefined && node.caps.maxTokens === undefined) continue;
      const use = node.used();
      if (node.caps.maxUsd !== undefined) usd = Math.min(usd, node.caps.maxUsd - use.usd);
      if (node.caps.maxTokens !== undefined)
        tokens = Math.min(tokens, node.caps.maxTokens - use.tokens);
    }
    return { usd, tokens };
  }

  /** Holds a step's worst case (it counts in every ancestor's use until `release`). */
  hold(spend: TreeSpend): void {
    this.#held = { usd: this.#held.usd + spend.usd, tokens: this.#held.tokens + spend.tokens };
  }

  /** Releases what `hold` took (the step's real cost is in the run's log by then). */
  release(): void {
    this.#held = { usd: 0, tokens: 0 };
  }

  /** Takes the node out of its parent's use (its spend is in the parent's log now). */
  detach(): void {
    if (this.parent) this.parent.#children.delete(this);
  }
}

/** Each run's node, by its fold (the run as this process holds it). */
const nodes = new WeakMap<RunFold, BudgetNode>();

/** The node of a run, made (as a root) the first time a child asks for it. */
export function nodeOf(fold: RunFold): BudgetNode {
  let node = nodes.get(fold);
  if (!node) {
    node = new BudgetNode(fold.start.budget, () => foldSpend(fold));
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

/** Gives a child run's fold its node (made before the fold existed). */
export function attachNode(fold: RunFold, node: BudgetNode): void {
  nodes.set(fold, node);
}

/** A run's committed spend as its fold holds it. */
export function foldSpend(fold: RunFold): TreeSpend {
  const spend = fold.state.spend;
  return { usd: fold.committedUsd, tokens: spend.inputTokens + spend.outputTokens };
}

/**
 * The caps of a child run: its own budget, each money and token cap shrunk to `share` of what
 * the parent (and every ancestor) has left when the call starts, and its wall clock to what is
 * left of the parent's. `undefined` when nothing is left to give.
 */
export function childCaps(
  own: Budget,
  share: number,
  parent: BudgetNode,
  parentFold: RunFold,
  now: number,
): { budget: Budget } | { exhausted: string } {
  const left = parent.left();
  const budget: Budget = { ...own };
  if (Number.isFinite(left.usd)) {
    const give = share * left.usd;
    if (!(give > 0))
      return { exhausted: `the parent run has $${Math.max(0, left.usd).toFixed(4)} left` };
    budget.maxUsd = Math.min(own.maxUsd ?? give, give);
  }
  if (Number.isFinite(left.tokens)) {
    const give = Math.floor(share * left.tokens);
    if (!(give >= 1))
      return { exhausted: `the parent run has ${Math.max(0, left.tokens)} tokens left` };
    budget.maxTokens = Math.min(own.maxTokens ?? give, give);
  }
  const wall = parentFold.start.budget.wallClockMs;
  if (wall !== undefined) {
    const give = Math.floor(wall - parentFold.activeMs(now));
    if (!(give >= 1)) return { exhausted: "the parent run's wall clock has run out" };
    budget.wallClockMs = Math.min(own.wallClockMs ?? give, give);
  }
  return { budget };
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
  });
  return { maxTokens, promptBound };
}
