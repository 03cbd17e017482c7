// `hangar settings` and `hangar galleries`: a node's settings as people type them (on/off, FROM-TO), turned into
// the NodeSettings patch the node validates.
import { CommanderError } from 'commander';
import { HangarError } from '../../shared/errors.ts';
import { galleryNameFor } from '../../shared/gallery-name.ts';
import { parseLabel } from '../../shared/selector.ts';
import type { GallerySetting, NodeSettings, SettingsView } from '../../shared/types.ts';
import { table } from './format.ts';
import { typedNumber } from './typed-number.ts';

type Scalar = Exclude<keyof NodeSettings, 'galleries' | 'backendStartTimeoutSec'>;

const KEYS: Record<string, { key: Scalar; parse(text: string, name: string): NodeSettings[Scalar]; show(value: NodeSettings[Scalar]): string }> = {
  'auto-upgrade': { key: 'autoUpgrade', parse: onOff, show: (v) => (v ? 'on' : 'off') },
  'auto-upgrade-hours': { key: 'autoUpgradeHours', parse: whole, show: String },
  ports: { key: 'portRange', parse: portRange, show: (v) => (v as [number, number]).join('-') },
  'keep-running': { key: 'keepBackendsRunning', parse: onOff, show: (v) => (v ? 'on' : 'off') },
  'start-on-launch': { key: 'startBackendsOnLaunch', parse: onOff, show: (v) => (v ? 'on' : 'off') },
  labels: { key: 'labels', parse: labels, show: (v) => Object.entries(v as Record<string, string>).map(([k, x]) => `${k}=${x}`).join(',') || '-' },
  'smoke-start': { key: 'smokeStart', parse: onOff, show: (v) => (v ? 'on' : 'off') },
  'localai-respawn': { key: 'localaiRespawn', parse: onOff, show: (v) => (v ? 'on' : 'off') },
  'localai-autostart': { key: 'localaiAutostart', parse: onOff, show: (v) => (v ? 'on' : 'off') },
  'start-timeout': { key: 'startTimeoutSec', parse: whole, show: (v) => `${v as number} s` },
};

/** `gpu=nvidia,zone=a` (or "" for none). */
function labels(text: string): Record<string, string> {
  try {
    return Object.fromEntries(text.split(',').filter(Boolean).map(parseLabel).map((l) => [l.key, l.value]));
  } catch (error) {
    throw usage((error as Error).message);
  }
}

function usage(message: string): CommanderError {
  return new CommanderError(2, 'hangar.usage', message);
}

function onOff(text: string, name: string): boolean {
  if (text === 'on' || text === 'off') return text === 'on';
  throw usage(`${name} wants on or off, got "${text}"`);
}

function whole(text: string, name: string): number {
  const value = typedNumber(text);
  if (Number.isNaN(value)) throw usage(`${name} wants a whole number, got "${text}"`);
  return value;
}

function portRange(text: string, name: string): [number, number] {
  const match = /^(\d+)-(\d+)$/.exec(text);
  if (!match) throw usage(`${name} wants FROM-TO, got "${text}"`);
  return [Number(match[1]), Number(match[2])];
}

export function settingsKeys(): string {
  return Object.keys(KEYS).join(', ');
}

/** The patch `hangar settings KEY VALUE` asks for. */
export function settingPatch(name: string, value: string): Partial<NodeSettings> {
  const setting = KEYS[name];
  if (!setting) throw usage(`no setting "${name}"; settings are ${settingsKeys()}, and galleries (see hangar galleries)`);
  return { [setting.key]: setting.parse(value, name) };
}

/** `hangar settings start-timeout SECONDS|default --backend NAME`: the backends' own start timeouts after it. */
export function backendStartTimeoutPatch(current: Record<string, number>, backend: string, value: string): Partial<NodeSettings> {
  const { [backend]: _old, ...others } = current;
  if (value === 'default') {
    if (!Object.hasOwn(current, backend)) throw new HangarError('not-found', `backend ${backend} has no start timeout of its own`);
    return { backendStartTimeoutSec: others };
  }
  return { backendStartTimeoutSec: { ...others, [backend]: whole(value, 'start-timeout') } };
}

export function settingsTable(view: SettingsView): string {
  const rows = Object.entries(KEYS).map(([name, { key, show }]) => ({
    setting: name,
    value: show(view.settings[key]),
    note: view.fixed.includes(key) ? 'fixed for this run by how the agent was started' : '',
  }));
  const own = Object.entries(view.settings.backendStartTimeoutSec).map(([backend, seconds]) => ({
    setting: `start-timeout --backend ${backend}`,
    value: `${seconds} s`,
    note: 'over the node\'s for this backend',
  }));
  return table([...rows, ...own], '');
}

export function galleriesTable(view: SettingsView): string {
  const fixed = view.fixed.includes('galleries');
  const rows = view.settings.galleries.map((g) => ({ gallery: g.name, location: g.location, enabled: g.enabled ? 'yes' : 'no' }));
  return table(rows, 'no galleries') + (fixed ? 'galleries are fixed for this run by how the agent was started\n' : '');
}

/** The galleries after `hangar galleries ACTION ...`. */
export function editedGalleries(galleries: GallerySetting[], action: string, args: string[]): GallerySetting[] {
  const [first, second] = args;
  const find = (name: string | undefined) => {
    const found = galleries.find((g) => g.name === name);
    if (!found) throw new HangarError('not-found', `no gallery named "${name ?? ''}"; see hangar galleries`);
    return found;
  };
  switch (action) {
    case 'add': {
      if (!first) throw usage('galleries add wants a LOCATION (an absolute path or a URL) and an optional NAME');
      return [...galleries, { name: second ?? galleryNameFor(first), location: first, enabled: true }];
    }
    case 'remove':
      return galleries.filter((g) => g !== find(first));
    case 'enable':
    case 'disable': {
      const target = find(first);
      return galleries.map((g) => (g === target ? { ...g, enabled: action === 'enable' } : g));
    }
    case 'up':
    case 'down': {
      const from = galleries.indexOf(find(first));
      const to = Math.max(0, Math.min(galleries.length - 1, from + (action === 'up' ? -1 : 1)));
      const moved = [...galleries];
      moved.splice(to, 0, ...moved.splice(from, 1));
      return moved;
    }
    default:
      throw usage(`galleries does not know "${action}": use add, remove, enable, disable, up or down`);
  }
}
