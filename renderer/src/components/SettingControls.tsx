// The controls every settings section is made of: a titled card, a toggle with its hint, a number applied in place.
import { useEffect, useState, type FormEvent, type ReactNode } from 'react';

export function Section({ title, fixedReason = null, children }: { title: string; fixedReason?: string | null; children: ReactNode }) {
  return (
    <section className="card settings-section" aria-label={title}>
      <h2>{title}</h2>
      {fixedReason && <p className="muted">{fixedReason}</p>}
      {children}
    </section>
  );
}

export function Toggle(props: { label: string; hint: string; checked: boolean; disabled: boolean; onChange(value: boolean): void; testId: string }) {
  return (
    <label className="setting-toggle">
      <input type="checkbox" checked={props.checked} disabled={props.disabled} onChange={(e) => props.onChange(e.target.checked)} data-testid={props.testId} />
      <span>
        {props.label}
        <span className="muted setting-hint">{props.hint}</span>
      </span>
    </label>
  );
}

/** A number edited in place and saved with its button, refused in the form while it is not valid. */
export function NumberSetting(props: { label: string; value: number; disabled: boolean; onSave(value: number): void; check(value: number): string | null; testId: string; hint?: string }) {
  const [text, setText] = useState(String(props.value));
  useEffect(() => setText(String(props.value)), [props.value]);
  const problem = props.check(Number(text));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!problem) props.onSave(Number(text));
  };
  return (
    <form className="setting-row" onSubmit={submit}>
      <label className="field">
        {props.label}
        <input type="number" value={text} disabled={props.disabled} onChange={(e) => setText(e.target.value)} data-testid={props.testId} />
      </label>
      <button type="submit" className="btn small" disabled={props.disabled || problem !== null || Number(text) === props.value}>
        Apply
      </button>
      {problem && !props.disabled ? <span className="muted setting-problem">{problem}</span> : props.hint && <span className="muted setting-hint">{props.hint}</span>}
    </form>
  );
}
