import { errorMessage } from '../state/session.ts';
import { toast } from '../state/toasts.ts';

/** Runs a row's action; a failure becomes an error toast naming the action. */
export async function attempt(what: string, action: () => Promise<unknown>): Promise<void> {
  try {
    await action();
  } catch (error) {
    toast('error', `${what}: ${errorMessage(error)}`);
  }
}
