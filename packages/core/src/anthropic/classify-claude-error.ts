import type { ErrorClassification } from "../contracts/model.js";
import { LoopguardError } from "../errors.js";
import { classifyError, retryAfterFrom } from "../retry.js";
import { StreamProtocolError } from "../stream/assemble-message.js";
import { type AnthropicSdk, loadedSdk } from "./load-sdk.js";

/**
 * Classifies an error thrown by `@anthropic-ai/sdk` with the SDK's own error classes
 * (`instanceof`): `RateLimitError` (429), `InternalServerError` (5xx, 529 overloaded
 * included), `APIConnectionError` and `APIConnectionTimeoutError` are retryable;
 * `BadRequestError` (400), `AuthenticationError` (401), `PermissionDeniedError` (403),
 * `NotFoundError` (404) and 413 fail at once. `retry-after-ms` and `retry-after` become
 * `retryAfterMs`. A mid-stream SSE `error` event (no status) is classified by its type
 * (`overloaded_error`, `api_error`, `rate_limit_error` retryable); a stream that broke the
 * protocol ({@link StreamProtocolError}) by its own flag. Errors from another copy of the SDK, or from anything else, are classified
 * by status code and name (core's `classifyError`).
 *
 * @example
 * const { retryable, kind, retryAfterMs } = classifyClaudeError(error);
 */
export function classifyClaudeError(
  error: unknown,
  sdk: AnthropicSdk | undefined = loadedSdk(),
): ErrorClassification {
  if (StreamProtocolError.isInstance(error)) return error.classification();
  if (LoopguardError.isInstance(error)) {
    return {
      retryable: false,
      kind: error.code === "invalid_argument" ? "invalid_request" : error.code,
    };
  }
  if (!sdk || !(error instanceof sdk.AnthropicError)) return classifyError(error);
  if (error instanceof sdk.APIUserAbortError) return { retryable: false, kind: "aborted" };
  if (error instanceof sdk.APIConnectionTimeoutError)
    return { retryable: true, kind: "connection_timeout" };
  if (error instanceof sdk.APIConnectionError) return { retryable: true, kind: "connection" };
  if (!(error instanceof sdk.APIError)) {
    // The SDK refused to send the request (e.g. a non-streaming call it expects to run too long).
    return { retryable: false, kind: "client_error" };
  }
  const status = typeof error.status === "number" ? error.status : undefined;
  const retryAfterMs = retryAfterFrom(error.headers);
  const withStatus = (retryable: boolean, kind: string): ErrorClassification => ({
    retryable,
    kind,
    ...(status === undefined ? {} : { status }),
    ...(retryable && retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });
  if (error instanceof sdk.RateLimitError) return withStatus(true, "rate_limit");
  if (status === 529 || error.type === "overloaded_error") return withStatus(true, "overloaded");
  if (error instanceof sdk.InternalServerError) return withStatus(true, "server_error");
  if (error instanceof sdk.BadRequestError) return withStatus(false, "bad_request");
  if (status === undefined) {
    // An SSE `error` event after HTTP 200: the event's type says what went wrong.
    if (error.type === "rate_limit_error") return withStatus(true, "rate_limit");
    if (error.type === "api_error" || error.type === "timeout_error")
      return withStatus(true, "server_error");
  }
  if (error instanceof sdk.AuthenticationError) return withStatus(false, "authentication");
  if (error instanceof sdk.PermissionDeniedError) return withStatus(false, "permission");
  if (error instanceof sdk.NotFoundError) return withStatus(false, "not_found");
  if (status === 413) return withStatus(false, "request_too_large");
  return classifyError(error);
}
