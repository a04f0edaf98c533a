// What `@loopguard/policy/node` resolves to on a runtime without a file system (the "workerd",
// "edge-light" and "browser" export conditions): a clear error at import, not a failed
// resolution of node:fs deep in a bundle.
throw new Error(
  '[policy] @loopguard/policy/node (fileFreezeStore, loadPolicyFile) needs node:fs, which this runtime does not have. Import from "@loopguard/policy" instead: loadPolicy(jsonTextOrObject) loads a policy you fetched or bundled, and killSwitch({ store }) takes any FreezeStore (a KV or database one of your own).',
);
