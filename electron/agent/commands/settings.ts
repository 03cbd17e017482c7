// `hangar settings` and `hangar galleries`: a node's settings, and the galleries it reads.
import { CommanderError } from 'commander';
import { backendStartTimeoutPatch, editedGalleries, galleriesTable, settingPatch, settingsKeys, settingsTable } from '../settings-cli.ts';
import type { CliContext } from './context.ts';
import { print, readStdin } from './terminal.ts';
import { HangarError } from '../../../shared/errors.ts';
import { isGalleryRefusal } from '../../../shared/gallery-refusal.ts';
import { holdsPassword } from '../../../shared/url-password.ts';

export function registerSettingsCommands(context: CliContext): void {
  context.clientCommand('settings', `show this node's settings, or change one: settings KEY VALUE (${settingsKeys()})`, (c) =>
    c.argument('[key]').argument('[value]').option('--backend <name>', 'start-timeout SECONDS for this backend only (default: back to the node\'s)'),
  ).action(context.withClient(async (c, key: string | undefined, value: string | undefined, options: { json?: boolean; backend?: string }) => {
    if (key !== undefined && value === undefined) throw new CommanderError(2, 'hangar.usage', `settings ${key} wants a value`);
    if (options.backend !== undefined && key !== 'start-timeout') throw new CommanderError(2, 'hangar.usage', '--backend goes with start-timeout only');
    const patch = async () => options.backend === undefined
      ? settingPatch(key!, value!)
      : backendStartTimeoutPatch((await c.settings({ node: context.node })).settings.backendStartTimeoutSec, options.backend, value!);
    const view = key === undefined ? await c.settings({ node: context.node }) : await c.updateSettings({ node: context.node, settings: await patch() });
    print(options, view, () => settingsTable(view));
  }));

  context.clientCommand('galleries', 'list the galleries this node reads, or change them: add LOCATION [NAME] (LOCATION "-" reads it from stdin), remove, enable, disable, up, down NAME', (c) =>
    c.argument('[action]').argument('[args...]').option('--force', 'add a gallery even when it cannot be read now'),
  ).action(context.withClient(async (c, action: string | undefined, args: string[], options: { json?: boolean; force?: boolean }) => {
    let view = await c.settings({ node: context.node });
    if (action === 'add') args = [await locationToAdd(args[0]), ...args.slice(1)];
    if (action !== undefined) {
      const galleries = editedGalleries(view.settings.galleries, action, args);
      const adding = action === 'add';
      // A scheme no node reads is said in the gallery's words, --force or not; what the location holds the node reads.
      if (adding) (await import('../../core/gallery/index.ts')).parseLocation(args[0]!);
      try {
        view = await c.updateSettings({ node: context.node, settings: { galleries }, ...(adding && options.force && { force: true }) });
      } catch (error) {
        if (adding && error instanceof HangarError && isGalleryRefusal(error.message)) throw new HangarError(error.code, `${error.message} (--force adds it anyway)`);
        throw error;
      }
    }
    print(options, view.settings.galleries, () => galleriesTable(view));
  }));
}

const PASSWORD_ON_COMMAND_LINE =
  'a command line is readable by every user of this machine, and this location holds a password: give it on stdin instead, as hangar galleries add - [NAME]';

/** The location `galleries add` was given: a password only through stdin ("-"), never on the command line. */
async function locationToAdd(given: string | undefined): Promise<string> {
  if (given === '-') {
    const read = await readStdin();
    if (read === '') throw new CommanderError(2, 'hangar.usage', 'no location was given on stdin');
    return read;
  }
  if (given !== undefined && holdsPassword(given)) throw new CommanderError(2, 'hangar.usage', PASSWORD_ON_COMMAND_LINE);
  return given ?? '';
}
