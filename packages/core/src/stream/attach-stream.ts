import type {
  MessageStreamEvent,
  Model,
  ModelCallOptions,
  ModelRequest,
} from "../contracts/model.js";

/**
 * Gives a model its `stream()` as a non-enumerable property. A wrapper written before models
 * could stream, `{ ...model, create: wrapped }`, then copies no `stream` and the loop calls its
 * `create`, so the wrapper still sees (and can fault or record) every call. A wrapper that
 * wants streaming passes `stream` on explicitly.
 *
 * @example
 * return attachStream({ name, model, create }, async function* (request, { signal }) { ... });
 */
export function attachStream<T extends Model>(
  model: T,
  stream: (request: ModelRequest, options: ModelCallOptions) => AsyncIterable<MessageStreamEvent>,
): T & { stream: NonNullable<Model["stream"]> } {
  Object.defineProperty(model, "stream", {
    value: stream,
    enumerable: false,
    writable: true,
    configurable: true,
  });
  return model as T & { stream: NonNullable<Model["stream"]> };
}
