export { BUILTIN_TYPES, type BuiltinType, builtinDetector, DEFAULT_TYPES } from "./builtin-detectors.js";
export type { Detector, DetectorMatch, Finding } from "./detector.js";
export { redact } from "./redact.js";
export { DetectorError, RedactError, RedactOptionsError } from "./redact-error.js";
export type { Placeholder, RedactOptions, RedactResult } from "./redaction-engine.js";
export { createRedactionScope, type RedactionScope } from "./redaction-scope.js";
export { isSensitiveKey } from "./sensitive-key.js";
