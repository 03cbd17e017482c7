// What a thrown value says, in words: the one way main, the agent, the CLI and the renderer turn an error into text.

/** The message of whatever was thrown (an Error's message, else the value as a string). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Its first line, trimmed: for a status line, a log line or a job's end, where a stack or a dump would not fit. */
export function oneLine(error: unknown): string {
  return messageOf(error).split('\n', 1)[0]!.trim() || 'unknown error';
}

/** `text` cut to `max` characters, saying how many more it had: an error may echo what it was given, 100 kB of it. */
export function cutText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} characters more)`;
}
