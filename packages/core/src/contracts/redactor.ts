/**
 * The Redactor contract: a function that redacts a value for traces, the events streamed to the
 * host (`onEvent`) and logs. The log itself keeps what the run needs to resume.
 *
 * Failure rule: fails closed for what it guards. A redactor that throws on a span makes the
 * span go out with no content and no string attributes; one that throws on a streamed event
 * withholds the event (the error goes to `onError`). It never stops the run.
 */
export type Redactor = (value: unknown) => unknown;
