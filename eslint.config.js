import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const electronOnlyHere = ['electron/main.ts', 'electron/preload.ts', 'electron/ipc.ts'];

export default tseslint.config(
  { ignores: ['dist/', 'release/', 'artifacts/', 'test-results/', 'node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'electron', message: 'Only electron/main.ts, preload.ts and ipc.ts may import electron; the core stays Electron-free.' }] },
      ],
    },
  },
  { files: electronOnlyHere, rules: { 'no-restricted-imports': 'off' } },
);
