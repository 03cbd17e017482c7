// The shell every host setting's part of Settings shares (the LocalAI cluster, the LocalAI server): read when it
// opens, what it is linked to now (unknown while the agent cannot be reached, until read again), and its form, or why
// the command line fixed it; the form links or forgets, says the first reason the host would refuse it, and shows the
// host's refusal.
import { useEffect, type ReactNode } from 'react';
import { useLostSince, useReadAgainWhenBack } from '../state/connection.ts';
import type { HostSetting } from '../state/host-settings.ts';
import { ActionButton } from './ActionButton.tsx';
import { Alert } from './Message.tsx';
import { useAction } from './useAction.ts';

interface SectionProps<View extends { fixed: string | null }, Request> {
  setting: HostSetting<View, Request>;
  /** What it is, in the section's title and its errors ("LocalAI server"). */
  title: string;
  testId: string;
  intro: ReactNode;
  /** What it is linked to; `lostAt` when the link to the agent was lost since it was read, else null. */
  state: (view: View, lostAt: number | null) => ReactNode;
  form: (view: View) => ReactNode;
  /** Read again this often while shown, when what it links to changes with no word to the page. */
  refreshMs?: number;
}

export function HostSettingSection<View extends { fixed: string | null }, Request>({ setting, title, testId, intro, state, form, refreshMs }: SectionProps<View, Request>) {
  const view = setting.use((s) => s.view);
  const load = useAction(setting.load);
  const lostAt = useLostSince(setting.use((s) => s.readAt));
  useReadAgainWhenBack(lostAt, setting.load);
  useEffect(() => {
    void load.run();
    if (refreshMs === undefined) return;
    const timer = setInterval(() => void setting.load().catch(() => undefined), refreshMs);
    return () => clearInterval(timer);
  }, [load.run, setting, refreshMs]);
  if (!view) return load.error ? <Alert>Could not read the {title}: {load.error}</Alert> : null;
  return (
    <section className="card settings-section" aria-label={title} data-testid={testId}>
      <h2>{title}</h2>
      <p className="muted">{intro}</p>
      {state(view, lostAt)}
      {view.fixed === null ? form(view) : <p className="muted">{view.fixed}</p>}
    </section>
  );
}

interface FormProps<Request> {
  setting: HostSetting<unknown, Request>;
  /** The form's accessible name. */
  label: string;
  request: Request;
  /** Why the form cannot be sent yet (a field left empty, or the host's schema), or null. */
  problem: string | null;
  /** Whether to show `problem`: not while the form is still being filled in. */
  showProblem: boolean;
  save: { text: string; testId: string };
  /** Offered once something is kept. */
  forget: { text: string; testId: string } | null;
  children: (disabled: boolean) => ReactNode;
}

export function HostSettingForm<Request>({ setting, label, request, problem, showProblem, save, forget, children }: FormProps<Request>) {
  const change = useAction(setting.change);
  return (
    <>
      <form
        className="setting-row"
        aria-label={label}
        onSubmit={(e) => {
          e.preventDefault();
          if (!problem) void change.run(request);
        }}
      >
        {children(change.pending)}
        <ActionButton submit className="btn small primary" unavailable={change.pending ? 'Saving…' : problem} data-testid={save.testId}>
          {save.text}
        </ActionButton>
        {forget && (
          <ActionButton className="btn small" unavailable={change.pending ? 'Saving…' : null} onAct={() => void change.run(null)} data-testid={forget.testId}>
            {forget.text}
          </ActionButton>
        )}
        {problem && showProblem && <span className="muted setting-problem">{problem}</span>}
      </form>
      {change.error && <Alert>{change.error}</Alert>}
    </>
  );
}
