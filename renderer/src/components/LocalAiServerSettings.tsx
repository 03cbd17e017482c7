// Settings → LocalAI server: the `local-ai run` server that shares this node's backends directory. Hangar shows its
// models beside its own processes and, after every swap, brings them back on the new tree through its API.
import { useEffect, useState, type ClipboardEvent } from 'react';
import type { LocalAiServerRequest } from '../../../shared/api.ts';
import { isLoopback } from '../../../shared/loopback.ts';
import type { LocalAiServerView } from '../../../shared/types.ts';
import { versionParts } from '../format.ts';
import { unknownSince } from '../state/connection.ts';
import { localaiServerSetting } from '../state/host-settings.ts';
import { JoinField, requestFrom } from './join-form.tsx';
import { HostSettingForm, HostSettingSection } from './HostSettingSection.tsx';

export function LocalAiServerSection() {
  return (
    <HostSettingSection
      setting={localaiServerSetting}
      title="LocalAI server"
      testId="localai-server-settings"
      intro={
        <>
          A LocalAI server (<code>local-ai run</code>) on this machine that uses this node&apos;s backends directory. Its models show under Processes;
          after every upgrade, Hangar&apos;s or LocalAI&apos;s own, each one that ran from the replaced tree is stopped and loaded again on the new one.
          Hangar calls only <code>/system</code>, <code>/backend/monitor</code>, <code>/backend/shutdown</code>, <code>/backend/load</code> and{' '}
          <code>/version</code>.
        </>
      }
      state={(view, lostAt) => <ServerState view={view} lostAt={lostAt} />}
      form={(view) => <ServerForm view={view} />}
      // LocalAI comes and goes (Hangar starts and stops the one it runs, or a user one by hand): its link with it.
      refreshMs={1000}
    />
  );
}

function ServerState({ view, lostAt }: { view: LocalAiServerView; lostAt: number | null }) {
  const status = view.status;
  if (!view.url) return <p data-testid="localai-server-state">No LocalAI server is linked.</p>;
  if (lostAt !== null) return <p data-testid="localai-server-state">Link to {view.url} {unknownSince(lostAt)}.</p>;
  if (!status) return <p data-testid="localai-server-state">Linking {view.url}…</p>;
  const models = `${status.models} ${status.models === 1 ? 'model' : 'models'} loaded`;
  // LocalAI's commit shown short, as git shows one: whole on hover, and in whatever copy of the line holds it.
  const { tag, commit } = versionParts(status.version ?? '');
  const copyWhole = (e: ClipboardEvent<HTMLElement>) => {
    const selected = document.getSelection()?.toString() ?? '';
    if (!commit || !selected.includes(commit.short)) return;
    e.clipboardData.setData('text/plain', selected.replace(commit.short, commit.full));
    e.preventDefault();
  };
  return (
    <>
      <p data-testid="localai-server-state" onCopy={copyWhole}>
        {status.connected ? (
          <>
            Linked to LocalAI {tag}
            {commit && (
              <>
                {' ('}
                <code title={`commit ${commit.full}`} data-testid="localai-server-commit">
                  {commit.short}
                </code>
                )
              </>
            )}{' '}
            at {view.url}: {models}.
          </>
        ) : (
          `Not linked to ${view.url}: ${status.reason ?? 'linking…'}`
        )}
      </p>
      {status.backendsNote && (
        <p className="muted" data-testid="localai-server-note">
          {status.backendsNote}
        </p>
      )}
    </>
  );
}

function ServerForm({ view }: { view: LocalAiServerView }) {
  const [form, setForm] = useState({ url: view.url ?? '', apiKey: '', insecure: view.insecure });
  useEffect(() => setForm({ url: view.url ?? '', apiKey: '', insecure: view.insecure }), [view.url, view.insecure]);
  const request = requestFrom<LocalAiServerRequest>(form);
  const problem = form.url === '' ? "Give the server's address." : localaiServerSetting.problem(request);
  return (
    <HostSettingForm
      setting={localaiServerSetting}
      label="LocalAI server to link"
      request={request}
      problem={problem}
      showProblem={form.url !== ''}
      save={{ text: 'Link', testId: 'localai-server-save' }}
      forget={view.url ? { text: 'Forget this server', testId: 'localai-server-forget' } : null}
    >
      {(disabled) => (
        <>
          <JoinField label="Address" value={form.url} disabled={disabled} onChange={(url) => setForm({ ...form, url })} testId="localai-server-url" placeholder="http://127.0.0.1:8080" grow />
          <JoinField
            label="API key"
            type="password"
            value={form.apiKey}
            disabled={disabled}
            onChange={(apiKey) => setForm({ ...form, apiKey })}
            testId="localai-server-api-key"
            placeholder={view.hasApiKey ? 'kept' : ''}
          />
          {inClear(form.url) && (
            <label className="setting-toggle">
              <input type="checkbox" checked={form.insecure} disabled={disabled} onChange={(e) => setForm({ ...form, insecure: e.target.checked })} data-testid="localai-server-insecure" />
              <span>Allow plain http:// to another machine: its API key and Hangar&apos;s calls cross the network in clear</span>
            </label>
          )}
        </>
      )}
    </HostSettingForm>
  );
}

/** A plain http:// address on another machine: the key would cross the network in clear unless the user allows it. */
function inClear(address: string): boolean {
  try {
    const url = new URL(address.trim());
    return url.protocol === 'http:' && !isLoopback(url.hostname);
  } catch {
    return false;
  }
}
