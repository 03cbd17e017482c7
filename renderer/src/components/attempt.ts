import { toast } from '../state/toasts.ts';
import { messageOf } from '../../../shared/error-text.ts';

/** Runs a row's action; a failure becomes an error toast naming the action. */
export async function attempt(what: string, action: () => Promise<unknown>): Promise<void> {
  try {
    await action();
  } catch (error) {
    toast('error', `${what}: ${messageOf(error)}`);
  }
}
