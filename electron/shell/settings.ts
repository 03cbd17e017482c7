// What the desktop app needs before its host starts, kept in userData/settings.json: the NATS cluster this machine
// joins (the agent's --cluster options). Everything else is the node's own settings (state/settings.json).
import * as z from 'zod';
import { natsCredentialFields } from '../../shared/schemas.ts';

export const desktopSettingsSchema = z.object({
  /** Absent: this machine alone. */
  cluster: z
    .object({ url: z.string(), name: z.string().optional(), ...natsCredentialFields })
    .optional(),
});
export type DesktopSettings = z.infer<typeof desktopSettingsSchema>;

export const DEFAULT_DESKTOP_SETTINGS: DesktopSettings = {};
