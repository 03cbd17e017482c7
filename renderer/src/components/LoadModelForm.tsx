import { useState } from 'react';
import type { FormEvent } from 'react';
import { loadModel } from '../state/actions.ts';
import { useAction } from './useAction.ts';

/** Loads a model on one backend and reports what the node said. */
export function LoadModelForm({ backend }: { backend: string }) {
  const [model, setModel] = useState('');
  const [message, setMessage] = useState<string | null>(null);
  const load = useAction(loadModel);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const name = model.trim();
    if (!name) return;
    setMessage(null);
    const result = await load.run(backend, name);
    if (result) setMessage(result.message);
  }

  return (
    <form className="load-form" onSubmit={(e) => void submit(e)}>
      {message && (
        <output className="load-result ok" data-testid="load-result">
          {message}
        </output>
      )}
      {load.error && (
        <output className="load-result error" role="alert" data-testid="load-result">
          {load.error}
        </output>
      )}
      <input
        type="text"
        value={model}
        onChange={(e) => setModel(e.target.value)}
        placeholder="Model name"
        aria-label={`Model to load on ${backend}`}
        data-testid="load-model-input"
        spellCheck={false}
        autoComplete="off"
      />
      <button type="submit" className="btn" disabled={load.pending || !model.trim()}>
        {load.pending ? 'Loading…' : 'Load'}
      </button>
    </form>
  );
}
