// Gallery figures: parsing LocalAI's real index (against a bare js-yaml load, and the yaml package's parse), a warm listing, the cold capability
// probe, and how long a saved edit of a local index takes to show as a 'changed' event.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CORE_SCHEMA, load, mergeTag } from 'js-yaml';
import { parse } from 'yaml';
import { Galleries, parseGalleryIndex } from '../electron/core/gallery/index.ts';
import { median, timed, type BenchFigure } from './figure.ts';

const fixture = 'bench/fixtures/localai-backend-index.yaml';
const fixturePath = new URL('./fixtures/localai-backend-index.yaml', import.meta.url);
const runs = 5;

async function sample(action: () => unknown, count = runs): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) samples.push(await timed(action));
  return median(samples);
}

export default async function (): Promise<BenchFigure[]> {
  const text = await readFile(fixturePath, 'utf8');
  const source = { gallery: 'localai', baseDir: null, baseUrl: null };
  const bareLoad = await sample(() => load(text, { schema: CORE_SCHEMA.withTags(mergeTag) }));
  const yamlPackage = await sample(() => parse(text, { merge: true }));
  const parseMs = await sample(() => parseGalleryIndex(text, source));

  const galleries = new Galleries({ specs: [{ location: fileURLToPath(fixturePath) }] });
  await galleries.entries();
  const warmListMs = await sample(() => galleries.entries(), 50);
  galleries.close();

  const probeMs = await sample(async () => {
    const { detectCapability } = (await import(`../electron/core/gallery/capability.ts?cold=${Math.random()}`)) as typeof import('../electron/core/gallery/capability.ts');
    detectCapability({ PATH: process.env.PATH });
  });

  return [
    { name: 'gallery_parse_real_index_ms', value: parseMs, unit: 'ms', goal: 1000, note: `${fixture}; floor, a bare js-yaml load: ${bareLoad.toFixed(0)} ms; the yaml package's parse (used before): ${yamlPackage.toFixed(0)} ms` },
    { name: 'gallery_warm_list_ms', value: warmListMs, unit: 'ms', goal: 5, note: 'entries() of the loaded real index (stat check only)' },
    { name: 'gallery_capability_probe_ms', value: probeMs, unit: 'ms', goal: 50, note: 'uncached detectCapability(), incl. module import' },
    { name: 'gallery_edit_to_event_ms', value: await editToEventMs(), unit: 'ms', goal: 500, note: 'write of a local index -> "changed" (100 ms debounce)' },
  ];
}

async function editToEventMs(): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'hangar-bench-gallery-'));
  const path = join(dir, 'index.yaml');
  await writeFile(path, '- name: tool\n  version: 0.0.0\n');
  const galleries = new Galleries({ specs: [{ location: path }] });
  try {
    await galleries.entries();
    const samples: number[] = [];
    for (let i = 1; i <= runs; i++) {
      const changed = nextChange(galleries);
      samples.push(await timed(async () => {
        await writeFile(path, `- name: tool\n  version: ${i}.0.0\n`);
        await changed;
      }));
    }
    return median(samples);
  } finally {
    galleries.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The next 'changed' event; the timer also keeps the process alive (the gallery's watcher does not). */
function nextChange(galleries: Galleries): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no "changed" event within 5 s')), 5000);
    galleries.once('changed', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
