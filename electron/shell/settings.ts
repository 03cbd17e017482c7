// User settings of the desktop shell, persisted in userData.
import { z } from 'zod';

export const settingsSchema = z.object({
  /** Leave the backends this app started running when it quits. */
  keepBackendsRunning: z.boolean(),
});
export type Settings = z.infer<typeof settingsSchema>;

export const DEFAULT_SETTINGS: Settings = { keepBackendsRunning: false };
