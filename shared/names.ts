// Name rules without zod, so the UI can check a name before it sends it; the schemas are built on them.
export const NAME_MAX = 128;
/** The longest version Hangar takes, from a gallery or a person. */
export const VERSION_MAX = 128;

export const MODEL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:+-]*$/;

/** Worded for people: the UI shows it under the field, and the agent answers with it. */
export const MODEL_NAME_RULE = `Model names can use letters, digits, -, _, ., : and +, start with a letter or digit, and have at most ${NAME_MAX} characters`;

/** Why a model name would be refused, or null when it is fine. */
export function modelNameProblem(name: string): string | null {
  if (name.length === 0) return 'Type a model name';
  return name.length > NAME_MAX || !MODEL_NAME_PATTERN.test(name) ? MODEL_NAME_RULE : null;
}

/**
 * Suffixes of the working directories an install leaves beside a live backend: LocalAI's install and upgrade
 * (`.install-tmp`, `.install-backup`, `.upgrade-tmp`, `.backup`) and Hangar 0.1 (`.previous`).
 */
export const WORKING_SUFFIXES = ['.install-tmp', '.install-backup', '.upgrade-tmp', '.backup', '.previous'] as const;

/** What a backend's name, and any name beside it in the backends directory, is made of. */
export const NAME_CHARACTERS = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;
export const NAME_CHARACTERS_RULE = 'name may hold only letters, digits, ".", "_", "+" and "-", and must start with a letter or digit';

/** Why a backend name would be refused, or null: it names the backend's directory, so it is one plain path segment. */
export function backendNameProblem(name: string): string | null {
  if (name.length === 0) return 'name is empty';
  if (name.length > NAME_MAX) return `name is longer than ${NAME_MAX} characters`;
  if (!NAME_CHARACTERS.test(name)) return NAME_CHARACTERS_RULE;
  if (WORKING_SUFFIXES.some((s) => name.endsWith(s))) return 'name ends in a reserved working-directory suffix';
  return null;
}

/** A machine's name in a cluster joined by invitation: its NATS user's, and its inbox's. */
export const MACHINE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
