import { mergeConfig } from "vitest/config";
import { packageConfig } from "../../vitest.shared.ts";

// Type tests (`*.test-d.ts`) run beside the others: `tool()` lives on inference. Only errors in
// the type tests fail them; the sources are typechecked by the build.
export default mergeConfig(packageConfig(import.meta.dirname), {
  test: {
    typecheck: {
      enabled: true,
      include: ["src/**/*.test-d.ts"],
      tsconfig: "tsconfig.typecheck.json",
      ignoreSourceErrors: true,
    },
  },
});
