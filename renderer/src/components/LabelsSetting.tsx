import { useEffect, useState, type FormEvent } from 'react';
import { parseLabels } from '../../../shared/selector.ts';
import type { SettingsView } from '../../../shared/types.ts';
import { settingsProblem } from '../state/settings.ts';

const FIXED_REASON = 'Set when this node was started (--label); they can change after a restart.';

/** The node's labels as `KEY=VALUE, …`: what `--on label:KEY=VALUE`, pins and rollouts select it by. */
export function LabelsSetting({ view, disabled, save }: { view: SettingsView; disabled: boolean; save(labels: Record<string, string>): void }) {
  const current = Object.entries(view.settings.labels).map(([k, v]) => `${k}=${v}`).join(', ');
  const [text, setText] = useState(current);
  useEffect(() => setText(current), [current]);
  const fixed = view.fixed.includes('labels');
  let labels: Record<string, string> | null = null;
  let problem: string | null;
  try {
    labels = parseLabels(text);
    problem = settingsProblem({ labels });
  } catch (error) {
    problem = (error as Error).message;
  }
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (labels && !problem) save(labels);
  };
  return (
    <section className="card settings-section" aria-label="Labels">
      <h2>Labels</h2>
      <p className="muted">{fixed ? FIXED_REASON : 'The cluster selects nodes by them: hangar upgrade NAME --on label:gpu=nvidia, and pins in the Cluster view.'}</p>
      <form className="setting-row" onSubmit={submit}>
        <label className="field">
          Labels
          <input value={text} placeholder="gpu=nvidia, zone=a" disabled={disabled || fixed} onChange={(e) => setText(e.target.value)} data-testid="setting-labels" />
        </label>
        <button type="submit" className="btn small" disabled={disabled || fixed || problem !== null || text === current} data-testid="setting-labels-apply">
          Apply
        </button>
        {problem && <span className="muted setting-problem">{problem}</span>}
      </form>
    </section>
  );
}
