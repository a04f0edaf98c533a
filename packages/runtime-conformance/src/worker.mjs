// workerd (Cloudflare Workers): the same scenario behind fetch, bundled by esbuild.
import { runScenario } from "./scenario.mjs";

export default {
  async fetch() {
    const report = await runScenario("workerd");
    return new Response(JSON.stringify(report), {
      headers: { "content-type": "application/json" },
    });
  },
};
