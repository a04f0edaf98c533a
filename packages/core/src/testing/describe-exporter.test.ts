import { describeExporter } from "./describe-exporter.js";
import { recordingExporter } from "./recording-exporter.js";

await describeExporter({
  name: "recordingExporter",
  create: () => recordingExporter(),
  received: (exporter) => (exporter as ReturnType<typeof recordingExporter>).spans,
  createBroken: () => recordingExporter({ fail: true }),
});
