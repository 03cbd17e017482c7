// A number as a person types it on a command line: decimal digits, and a fraction where one is allowed. Number()
// alone also takes "0x10" (16), "1e3", "" (0) and spaces around the digits.
import { CommanderError } from 'commander';

/** The number `text` spells, or NaN when it is not plain decimal digits (with a fraction if `fraction`). */
export function typedNumber(text: string, options: { fraction?: boolean } = {}): number {
  const pattern = options.fraction ? /^\d{1,15}(\.\d{1,15})?$/ : /^\d{1,15}$/;
  return pattern.test(text) ? Number(text) : NaN;
}

/** An option's whole number (its range the node checks), or a usage error. */
export function wholeNumber(text: string): number {
  const n = typedNumber(text);
  if (Number.isNaN(n)) throw new CommanderError(2, 'hangar.usage', `wants a whole number, got "${text}"`);
  return n;
}
