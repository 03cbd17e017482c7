// URLs as a gallery or its entries give them, checked before use: a malformed one, or a file:// URL that names no
// file on this machine, is bad input said in words, not Node's bare "Invalid URL" as a failure.
import { fileURLToPath } from 'node:url';
import { messageOf } from '../../shared/error-text.ts';
import { HangarError } from '../../shared/errors.ts';

/** `url` normalised; WHAT names it for the sentence ('gallery location "X"'). */
export function checkedUrl(url: string, what: string): string {
  if (!URL.canParse(url)) throw new HangarError('bad-input', `${what} is not a valid URL`);
  return new URL(url).href;
}

/** The path on this machine a file:// URL names; WHAT names it for the sentence. */
export function localPathOf(fileUrl: string, what: string): string {
  let path: string;
  try {
    path = fileURLToPath(fileUrl);
  } catch (error) {
    const reason = messageOf(error);
    throw new HangarError('bad-input', `${what} is not a file on this machine: ${reason.charAt(0).toLowerCase()}${reason.slice(1)}`);
  }
  if (path.includes('\0')) throw new HangarError('bad-input', `${what} holds a NUL character`);
  return path;
}
