import { useState, type FormEvent } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useBackends } from '../state/backends.ts';
import { settingsProblem } from '../state/settings.ts';
import { NumberSetting } from './SettingControls.tsx';

/**
 * A backend's own start timeout over the node's: a vLLM build that imports torch for minutes gets its hour while the
 * others keep failing fast. Each one set is listed with its seconds and a Remove; Add picks an installed backend.
 */
export function BackendStartTimeouts(props: { limits: Record<string, number>; nodeSeconds: number; disabled: boolean; save(limits: Record<string, number>): void }) {
  const { limits, disabled, save } = props;
  // A start is timed under the directory it runs from: an alias or a meta runs as its build, and is not offered.
  const runnable = useBackends(useShallow((s) => s.names.filter((name) => s.byName[name]?.kind === 'backend' && !s.byName[name].metaBackendFor)));
  const choices = runnable.filter((name) => !(name in limits));
  const [adding, setAdding] = useState('');
  const chosen = choices.includes(adding) ? adding : (choices[0] ?? '');
  const without = (name: string) => Object.fromEntries(Object.entries(limits).filter(([other]) => other !== name));
  const add = (e: FormEvent) => {
    e.preventDefault();
    if (chosen) save({ ...limits, [chosen]: props.nodeSeconds });
  };
  return (
    <div className="backend-start-timeouts" data-testid="backend-start-timeouts">
      {Object.entries(limits).map(([name, seconds]) => (
        <div className="setting-pair" key={name}>
          <NumberSetting
            label={`${name}: its own start timeout (seconds)`}
            value={seconds}
            disabled={disabled}
            onSave={(value) => save({ ...limits, [name]: value })}
            check={(value) => settingsProblem({ backendStartTimeoutSec: { [name]: value } })}
            testId={`setting-start-timeout-${name}`}
          />
          <button type="button" className="btn small ghost" disabled={disabled} onClick={() => save(without(name))} data-testid={`remove-start-timeout-${name}`}>
            Remove
          </button>
        </div>
      ))}
      {choices.length > 0 && (
        <form className="setting-row" onSubmit={add}>
          <label className="field">
            A backend's own start timeout
            <select value={chosen} disabled={disabled} onChange={(e) => setAdding(e.target.value)} data-testid="add-start-timeout-backend">
              {choices.map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" className="btn small" disabled={disabled} data-testid="add-start-timeout">
            Add
          </button>
        </form>
      )}
    </div>
  );
}
