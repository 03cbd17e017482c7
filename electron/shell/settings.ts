// What the desktop app needs before its host starts, kept in userData/settings.json: the NATS cluster this machine
// joins (the agent's --cluster options). Everything else is the node's own settings (state/settings.json).
import { z } from 'zod';

export const desktopSettingsSchema = z.object({
  /** Absent: this machine alone. */
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
export type DesktopSettings = z.infer<typeof desktopSettingsSchema>;

export const DEFAULT_DESKTOP_SETTINGS: DesktopSettings = {};
