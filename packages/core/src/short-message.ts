/** A one-line, bounded description of an error for the log and the model (300 characters at most). */
export function shortMessage(error: unknown): string {
  // The SDK's message embeds the raw JSON body; the API's own message inside it reads better.
  const body = (error as { error?: { error?: { type?: unknown; message?: unknown } } } | undefined)
    ?.error?.error;
  const status = (error as { status?: unknown } | undefined)?.status;
  const message =
    body && typeof body.message === "string"
      ? `${typeof status === "number" ? `${status} ` : ""}${typeof body.type === "string" ? `${body.type}: ` : ""}${body.message}`
      : error instanceof Error
        ? error.message
        : String(error);
  return message.length > 300 ? `${message.slice(0, 297)}...` : message;
}
