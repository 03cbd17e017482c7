import { useState } from 'react';
import type { FormEvent } from 'react';
import { modelNameProblem } from '../../../shared/names.ts';
import { loadModel } from '../state/actions.ts';
import { useBackends } from '../state/backends.ts';
import { useOfflineReason } from '../state/connection.ts';
import { useRefusal } from '../state/node.ts';
import { remember } from '../state/toasts.ts';
import { Message } from './Message.tsx';
import { useAction } from './useAction.ts';

/**
 * Loads a model on one backend and reports what the node said. The name is checked before anything is sent, and
 * a result is shown only while the backend is the install it was about.
 */
export function LoadModelForm({ backend }: { backend: string }) {
  const [model, setModel] = useState('');
  const [result, setResult] = useState<string | null>(null);
  const load = useAction(loadModel);
  const install = useBackends((s) => {
    const b = s.byName[backend];
    return b ? `${b.version ?? ''}@${b.installedAt ?? ''}` : '';
  });
  // A swap (upgrade, rollback, reinstall) makes what was said about the old install history.
  const [shownFor, setShownFor] = useState(install);
  if (shownFor !== install) {
    setShownFor(install);
    setResult(null);
    load.clearError();
  }
  const offline = useOfflineReason();
  const refused = useRefusal('load');
  const name = model.trim();
  const problem = name === '' ? null : modelNameProblem(name);
  const unavailable = offline ?? refused ?? (load.pending ? 'Loading…' : name === '' ? 'Type a model name' : problem);

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (unavailable !== null) return;
    setResult(null);
    const loaded = await load.run(backend, name);
    if (loaded) {
      setResult(loaded.message);
      remember('info', loaded.message);
      setModel((current) => (current.trim() === name ? '' : current));
    }
  }

  return (
    <form className="load-form" onSubmit={(e) => void submit(e)}>
      {result && (
        <Message kind="ok" testId="load-result" onDismiss={() => setResult(null)}>
          {result}
        </Message>
      )}
      {load.error && (
        <Message kind="error" testId="load-result" onDismiss={load.clearError}>
          {load.error}
        </Message>
      )}
      {problem && (
        <span className="field-problem" id={`load-problem-${backend}`} data-testid="load-problem">
          {problem}
        </span>
      )}
      <input
        type="text"
        value={model}
        onChange={(e) => setModel(e.target.value)}
        placeholder="Model name"
        aria-label={`Model to load on ${backend}`}
        aria-invalid={problem !== null}
        aria-describedby={problem ? `load-problem-${backend}` : undefined}
        data-testid="load-model-input"
        spellCheck={false}
        autoComplete="off"
      />
      <button type="submit" className="btn" aria-disabled={unavailable !== null} title={unavailable ?? undefined}>
        {load.pending ? 'Loading…' : 'Load'}
      </button>
    </form>
  );
}
