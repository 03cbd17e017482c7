// Settings for LocalAI's distributed mode: the cluster the host manages workers of (its frontend and NATS), and what
// a LocalAI worker's own Settings view says instead of Hangar's node settings.
import { useEffect, useState } from 'react';
import type { LocalAiJoinRequest } from '../../../shared/api.ts';
import { NEEDS_HANGAR_AGENT } from '../../../shared/localai-worker.ts';
import type { LocalAiJoin, LocalAiSettingsView } from '../../../shared/types.ts';
import { unknownSince } from '../state/connection.ts';
import { localaiSetting } from '../state/host-settings.ts';
import { useNodes } from '../state/node.ts';
import { JoinField, requestFrom } from './join-form.tsx';
import { HostSettingForm, HostSettingSection } from './HostSettingSection.tsx';

interface Form {
  frontend: string;
  apiKey: string;
  nats: string;
  natsUser: string;
  natsPassword: string;
  natsToken: string;
  natsCredsFile: string;
  natsCaFile: string;
  insecure: boolean;
}

function formFrom(join: LocalAiJoin | null): Form {
  return {
    frontend: join?.frontend ?? '',
    apiKey: '',
    nats: join?.nats ?? '',
    natsUser: join?.natsUser ?? '',
    natsPassword: '',
    natsToken: '',
    natsCredsFile: join?.natsCredsFile ?? '',
    natsCaFile: join?.natsCaFile ?? '',
    insecure: join?.insecure ?? false,
  };
}

/** Settings → LocalAI cluster: the frontend and NATS whose workers this host lists as nodes. */
export function LocalAiSection() {
  return (
    <HostSettingSection
      setting={localaiSetting}
      title="LocalAI cluster"
      testId="localai-settings"
      intro={
        <>
          The workers of a LocalAI distributed cluster (<code>local-ai worker</code>) are listed as nodes of their own and managed over their own
          protocol. Hangar reads the frontend&apos;s node list with an admin&apos;s API key and never writes to LocalAI&apos;s database.
        </>
      }
      state={(view, lostAt) => <LinkState view={view} lostAt={lostAt} />}
      form={(view) => <LocalAiForm view={view} />}
    />
  );
}

function LinkState({ view, lostAt }: { view: LocalAiSettingsView; lostAt: number | null }) {
  const status = view.status;
  if (!view.localai || !status) return <p data-testid="localai-state">No LocalAI cluster is set.</p>;
  if (lostAt !== null) return <p data-testid="localai-state">Connection to {status.frontend} {unknownSince(lostAt)}.</p>;
  const workers = `${status.workers} ${status.workers === 1 ? 'worker' : 'workers'}`;
  return (
    <p data-testid="localai-state">
      {status.connected ? `Connected to ${status.frontend}: ${workers}.` : `Not connected to ${status.frontend}: ${status.reason ?? 'connecting…'}`}
    </p>
  );
}

function LocalAiForm({ view }: { view: LocalAiSettingsView }) {
  const [form, setForm] = useState(() => formFrom(view.localai));
  useEffect(() => setForm(formFrom(view.localai)), [view.localai]);
  const request = requestFrom<LocalAiJoinRequest>(form);
  const problem = form.frontend === '' || form.nats === '' ? "Give the frontend's address and its NATS server's." : localaiSetting.problem(request);
  const kept = (has: boolean | undefined) => (has ? 'kept' : '');
  return (
    <HostSettingForm
      setting={localaiSetting}
      label="LocalAI cluster to manage"
      request={request}
      problem={problem}
      showProblem={form.frontend !== '' && form.nats !== ''}
      save={{ text: 'Connect', testId: 'localai-save' }}
      forget={view.localai ? { text: 'Forget this cluster', testId: 'localai-forget' } : null}
    >
      {(disabled) => {
        const field = (key: Exclude<keyof Form, 'insecure'>, label: string, props: { type?: string; placeholder?: string; grow?: boolean } = {}) => (
          <JoinField {...props} label={label} value={form[key]} disabled={disabled} onChange={(value) => setForm({ ...form, [key]: value })} testId={`localai-${key}`} />
        );
        return (
          <>
            {field('frontend', 'Frontend', { placeholder: 'http://HOST:8080', grow: true })}
            {field('apiKey', 'Admin API key', { type: 'password', placeholder: kept(view.localai?.hasApiKey) })}
            {field('nats', 'NATS', { placeholder: 'nats://HOST:4222', grow: true })}
            {field('natsUser', 'NATS user')}
            {field('natsPassword', 'NATS password', { type: 'password', placeholder: kept(view.localai?.hasNatsPassword) })}
            {field('natsToken', 'NATS token', { type: 'password', placeholder: kept(view.localai?.hasNatsToken) })}
            {field('natsCredsFile', 'NATS credentials file')}
            {field('natsCaFile', 'NATS CA file (tls://)')}
            <label className="setting-toggle">
              <input type="checkbox" checked={form.insecure} disabled={disabled} onChange={(e) => setForm({ ...form, insecure: e.target.checked })} />
              <span>Use a NATS server on another machine without credentials</span>
            </label>
          </>
        );
      }}
    </HostSettingForm>
  );
}

/** A LocalAI worker has LocalAI's settings, not Hangar's: said in place of the node settings. */
export function WorkerSettingsView() {
  const name = useNodes((s) => s.nodes.find((n) => n.id === s.selected)?.label ?? s.selected);
  return (
    <section className="view settings" aria-labelledby="settings-title">
      <header className="view-header">
        <h1 id="settings-title">Settings</h1>
      </header>
      <div className="settings-sections">
        <section className="card settings-section" aria-label="LocalAI worker" data-testid="worker-settings">
          <h2>{name} is a LocalAI worker</h2>
          <p>Its settings are LocalAI&apos;s: the worker&apos;s own command line, and its frontend&apos;s admin pages. Its galleries are the frontend&apos;s.</p>
          <p className="muted">Hangar&apos;s node settings (galleries, ports, auto-upgrade) need Hangar on its machine: {NEEDS_HANGAR_AGENT}.</p>
        </section>
      </div>
    </section>
  );
}
