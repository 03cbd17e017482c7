// Name rules without zod, so the UI can check a name before it sends it; the schemas are built on them.
export const NAME_MAX = 128;

export const MODEL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:+-]*$/;

/** Worded for people: the UI shows it under the field, and the agent answers with it. */
export const MODEL_NAME_RULE = `Model names can use letters, digits, -, _, ., : and +, start with a letter or digit, and have at most ${NAME_MAX} characters`;

/** Why a model name would be refused, or null when it is fine. */
export function modelNameProblem(name: string): string | null {
  if (name.length === 0) return 'Type a model name';
  return name.length > NAME_MAX || !MODEL_NAME_PATTERN.test(name) ? MODEL_NAME_RULE : null;
}

/** A machine's name in a cluster joined by invitation: its NATS user's, and its inbox's. */
export const MACHINE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
