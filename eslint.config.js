import js from '@eslint/js';
import boundaries from 'eslint-plugin-boundaries';
import globals from 'globals';
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

const electronOnlyHere = ['electron/main.ts', 'electron/preload.ts', 'electron/ipc.ts'];
const NO_ELECTRON = { name: 'electron', message: 'Only electron/main.ts, preload.ts and ipc.ts may import electron; the core stays Electron-free.' };

/** Core's areas: outside core, each is imported through its index.ts, its public surface, and nothing around it. */
const CORE_AREAS = ['gallery', 'install', 'machine', 'net', 'node', 'platform', 'supervisor'];
const THROUGH_INDEX = {
  group: CORE_AREAS.flatMap((area) => [`**/core/${area}/**`, `!**/core/${area}/index.ts`]),
  message: 'Outside electron/core/, an area of core is imported through its index.ts.',
};

/**
 * The layers, lowest first: a layer may import itself and any layer before it, never one after it, and the layers that
 * share a row never import each other (the cluster's code and LocalAI's meet only in fleet/). The renderer sees the
 * contract alone.
 */
const LAYERS = [
  ['shared'],
  ['backends'],
  ['core'],
  ['nats'],
  ['cluster', 'localai'],
  ['fleet'],
  ['agent', 'shell'],
  ['app'],
];
const ELEMENTS = [
  { type: 'shared', pattern: 'shared' },
  { type: 'backends', pattern: 'backends' },
  ...['core', 'nats', 'cluster', 'localai', 'fleet', 'agent', 'shell'].map((type) => ({ type, pattern: `electron/${type}` })),
  { type: 'renderer', pattern: 'renderer' },
  // What is left in electron/ (main.ts, preload.ts, ipc.ts): the desktop app that composes the rest.
  { type: 'app', pattern: 'electron' },
];
const below = (row) => LAYERS.slice(0, row).flat();
const allow = (type, to) => ({ from: { element: { type } }, allow: { to: { element: { types: { anyOf: to } } } } });
const layerPolicies = [
  ...LAYERS.flatMap((types, row) => types.map((type) => allow(type, [type, ...below(row)]))),
  allow('renderer', ['renderer', 'shared']),
];

export default tseslint.config(
  { ignores: ['dist/', 'release/', 'artifacts/', 'test-results/', 'node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': ['error', { paths: [NO_ELECTRON] }],
    },
  },
  {
    files: ['electron/*/**/*.ts'],
    ignores: ['electron/core/**', '**/*.test.ts', '**/testing/**', '**/testdata/**', '**/test-*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [NO_ELECTRON], patterns: [THROUGH_INDEX] }] },
  },
  { files: electronOnlyHere, rules: { 'no-restricted-imports': ['error', { patterns: [THROUGH_INDEX] }] } },
  {
    // Sources only: tests, the stand-ins they run and the benches reach across layers to set a scene.
    files: ['shared/**/*.ts', 'backends/**/*.ts', 'electron/**/*.ts', 'renderer/**/*.{ts,tsx}'],
    ignores: ['**/*.test.ts', '**/testing/**', '**/testdata/**', '**/test-*.ts'],
    plugins: { boundaries },
    settings: { 'boundaries/elements': ELEMENTS, 'boundaries/include': ['shared/**', 'backends/**', 'electron/**', 'renderer/**'] },
    rules: { 'boundaries/dependencies': ['error', { default: 'disallow', policies: layerPolicies }] },
  },
  {
    // A hook called after an early return, or in a branch, breaks React's count of them the render it changes.
    files: ['renderer/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: { 'react-hooks/rules-of-hooks': 'error' },
  },
);
