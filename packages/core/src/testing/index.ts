export { memoryEventStore } from "../memory-event-store.js";
export type { RecordingExporter } from "./recording-exporter.js";
export { recordingExporter } from "./recording-exporter.js";
export type { Script, ScriptedModel, ScriptedReply } from "./scripted-model.js";
export { fillReply, scriptedModel } from "./scripted-model.js";
