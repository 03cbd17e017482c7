// User settings of the desktop shell, persisted in userData.
import { z } from 'zod';

export const settingsSchema = z.object({
  /** Leave the backends this app started running when it quits. */
  keepBackendsRunning: z.boolean(),
  /** Start again, models loaded, the backends that ran when the app last quit. */
  startBackendsOnLaunch: z.boolean().default(false),
});
export type Settings = z.infer<typeof settingsSchema>;

export const DEFAULT_SETTINGS: Settings = { keepBackendsRunning: false, startBackendsOnLaunch: false };
