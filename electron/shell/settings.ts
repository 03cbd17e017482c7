// User settings of the desktop shell, persisted in userData.
import { z } from 'zod';

export const settingsSchema = z.object({
  /** Leave the backends this app started running when it quits. */
  keepBackendsRunning: z.boolean(),
  /** The NATS cluster this machine joins as a member (see `hangar agent --cluster`); absent: this machine alone. */
  cluster: z
    .object({
      url: z.string(),
      name: z.string().optional(),
      user: z.string().optional(),
      password: z.string().optional(),
      token: z.string().optional(),
      credsFile: z.string().optional(),
      caFile: z.string().optional(),
      insecure: z.boolean().optional(),
    })
    .optional(),
});
export type Settings = z.infer<typeof settingsSchema>;

export const DEFAULT_SETTINGS: Settings = { keepBackendsRunning: false };
