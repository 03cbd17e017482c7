// `hangar settings` and `hangar galleries`: a node's settings, and the galleries it reads.
import { CommanderError } from 'commander';
import { LOCAL_NODE } from '../../../shared/api.ts';
import { backendStartTimeoutPatch, editedGalleries, galleriesTable, settingPatch, settingsKeys, settingsTable } from '../settings-cli.ts';
import type { CliContext } from './context.ts';
import { print } from './terminal.ts';
import { HangarError } from '../../../shared/errors.ts';

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

  context.clientCommand('galleries', 'list the galleries this node reads, or change them: add LOCATION [NAME], remove, enable, disable, up, down NAME', (c) =>
    c.argument('[action]').argument('[args...]').option('--force', 'add a gallery even when it cannot be read now'),
  ).action(context.withClient(async (c, action: string | undefined, args: string[], options: { json?: boolean; force?: boolean }) => {
    let view = await c.settings({ node: context.node });
    if (action !== undefined) {
      const galleries = editedGalleries(view.settings.galleries, action, args);
      if (action === 'add') {
        const { galleryLocationProblem, parseLocation } = await import('../../core/gallery/index.ts');
        // --force skips only the look at what the location holds: a scheme no node reads is refused all the same.
        if (options.force) parseLocation(args[0]!);
        else {
          const problem = await galleryLocationProblem(args[0]!, { pathsAreHere: agentIsHere(context) });
          if (problem) throw new HangarError('bad-input', `${problem}: the gallery was not added (--force adds it anyway)`);
        }
      }
      view = await c.updateSettings({ node: context.node, settings: { galleries } });
    }
    print(options, view.settings.galleries, () => galleriesTable(view));
  }));
}

/** Whether a path given to this command names a file on the agent's machine: the node is this host's own, here. */
function agentIsHere(context: CliContext): boolean {
  const url = context.globals().node;
  return context.node === LOCAL_NODE && (url === undefined || /^https?:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:|\/|$)/i.test(url));
}
