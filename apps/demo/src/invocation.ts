/**
 * How the person at the terminal runs this CLI, for the commands it suggests ("Try next",
 * "Finish with: ..."): `npm run loopguard --` when it was started from a clone's npm scripts
 * (`npm run demo`, `npm run loopguard -- ...`), where no `loopguard` is on the PATH, else
 * `loopguard` (an installed bin).
 */
export function invocation(env: NodeJS.ProcessEnv = process.env): string {
  const script = env.npm_lifecycle_event;
  return script === "demo" || script === "loopguard" ? "npm run loopguard --" : "loopguard";
}
