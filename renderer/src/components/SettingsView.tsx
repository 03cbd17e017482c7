import { useEffect, useState, type FormEvent } from 'react';
import { LOCAL_NODE, type ClusterJoinRequest } from '../../../shared/api.ts';
import type { ClusterJoin, ClusterSettingsView, NodeSettings, SettingsView as View } from '../../../shared/types.ts';
import { useConnection, useOfflineReason } from '../state/connection.ts';
import { useNodes } from '../state/node.ts';
import { changeSettings, loadSettings, settingsProblem, useSettings } from '../state/settings.ts';
import { clusterSetting } from '../state/host-settings.ts';
import { BackendStartTimeouts } from './BackendStartTimeouts.tsx';
import { Galleries } from './GallerySettings.tsx';
import { Loading } from './BackendsView.tsx';
import { LabelsSetting } from './LabelsSetting.tsx';
import { InvitationSections } from './InvitationSettings.tsx';
import { JoinField, requestFrom } from './join-form.tsx';
import { LocalAiRunSection } from './LocalAiRunSettings.tsx';
import { LocalAiServerSection } from './LocalAiServerSettings.tsx';
import { LocalAiSection } from './LocalAiSettings.tsx';
import { NumberSetting, Section, Toggle } from './SettingControls.tsx';
import { useAction } from './useAction.ts';
import { Alert, Message } from './Message.tsx';
import { HostSettingForm } from './HostSettingSection.tsx';

const FIXED_REASON = 'Set when this node was started; it can change after a restart.';

export function SettingsView() {
  const view = useSettings((s) => s.view);
  const load = useAction(loadSettings);
  const change = useAction(changeSettings);
  // Every change is sent to the agent: off while it cannot be reached, the toggles saying why in their hint.
  const offline = useOfflineReason();
  const status = useConnection((c) => c.status);
  const reachable = status === 'open';
  // Lost, not still connecting at the start: nothing can be read until the agent is back.
  const unreachable = !reachable && status !== 'connecting';
  // Read when the view opens with the agent reachable, else once it is; and again after every loss, since what was
  // read before it may have changed meanwhile.
  useEffect(() => {
    if (reachable) void load.run();
  }, [reachable, load.run]);
  const busy = change.pending || offline !== null;
  const hostsOwn = useNodes((s) => s.selected) === LOCAL_NODE;
  const fixed = (key: keyof NodeSettings) => view?.fixed.includes(key) ?? false;
  const toggle = (key: 'autoUpgrade' | 'keepBackendsRunning' | 'startBackendsOnLaunch' | 'smokeStart' | 'localaiRespawn' | 'localaiAutostart', label: string, hint: string, testId: string) => (
    <Toggle
      label={label}
      hint={fixed(key) ? FIXED_REASON : (offline ?? hint)}
      checked={view?.settings[key] ?? false}
      disabled={busy || fixed(key)}
      onChange={(value) => void change.run({ [key]: value })}
      testId={testId}
    />
  );
  return (
    <section className="view settings" aria-labelledby="settings-title">
      <header className="view-header">
        <h1 id="settings-title">Settings</h1>
        <span className="count">each change applies at once</span>
      </header>
      {load.error && reachable && (
        <Alert>
          Could not read the settings: {load.error}
        </Alert>
      )}
      {!view && unreachable && (
        <p className="alert muted" role="status" data-testid="settings-unread">
          The settings are read once the agent can be reached.
        </p>
      )}
      {change.error && (
        <Message kind="error" boxed testId="settings-error" onDismiss={change.clearError}>
          {change.error}
        </Message>
      )}
      {!view ? (
        !load.error && !unreachable && <Loading what="settings" />
      ) : (
        <div className="settings-sections">
          {/* First: a user who runs LocalAI through Hangar comes here for it; the node's own settings follow. */}
          {hostsOwn && <LocalAiRunSection autostart={toggle('localaiAutostart', 'Start LocalAI with Hangar', 'Hangar starts the LocalAI it runs when it starts.', 'setting-localai-autostart')} />}
          {hostsOwn && <LocalAiServerSection />}
          <Galleries view={view} busy={busy} fixedReason={FIXED_REASON} save={(galleries) => void change.run({ galleries })} />
          <Section title="Upgrades">
            {toggle('autoUpgrade', 'Upgrade backends automatically', 'When a gallery offers a newer version, and on a timer.', 'setting-auto-upgrade')}
            <NumberSetting
              label="Check every (hours)"
              value={view.settings.autoUpgradeHours}
              disabled={busy || fixed('autoUpgradeHours') || !view.settings.autoUpgrade}
              onSave={(autoUpgradeHours) => void change.run({ autoUpgradeHours })}
              check={(autoUpgradeHours) => settingsProblem({ autoUpgradeHours })}
              testId="setting-auto-upgrade-hours"
            />
            {toggle(
              'smokeStart',
              'Check that a new build starts',
              'When no process of a backend runs to be restarted from its new build, start the build once and wait for its Health answer before the install or upgrade is done; one that does not answer is rolled back.',
              'setting-smoke-start',
            )}
            {toggle(
              'localaiRespawn',
              "Bring LocalAI's models back on the new build",
              'After an upgrade (Hangar\'s or LocalAI\'s own), stop each model a linked LocalAI server runs from the replaced tree and load it again on the new one.',
              'setting-localai-respawn',
            )}
          </Section>
          <Section title="Backends">
            <PortRange view={view} disabled={busy || fixed('portRange')} save={(portRange) => void change.run({ portRange })} />
            <NumberSetting
              label="Give a start this long (seconds)"
              value={view.settings.startTimeoutSec}
              disabled={busy || fixed('startTimeoutSec')}
              onSave={(startTimeoutSec) => void change.run({ startTimeoutSec })}
              check={(startTimeoutSec) => settingsProblem({ startTimeoutSec })}
              testId="setting-start-timeout"
              hint="How long a backend may take to answer Health and to load its model; never less than twice the longest start seen here."
            />
            <BackendStartTimeouts
              limits={view.settings.backendStartTimeoutSec}
              nodeSeconds={view.settings.startTimeoutSec}
              disabled={busy}
              save={(backendStartTimeoutSec) => void change.run({ backendStartTimeoutSec })}
            />
            {toggle('keepBackendsRunning', 'Keep backends running when Hangar quits', 'The next start takes them over again.', 'setting-keep-running')}
            {toggle(
              'startBackendsOnLaunch',
              'Start backends on launch',
              'Start again, with their models loaded, the backends that ran when Hangar last quit.',
              'setting-start-on-launch',
            )}
          </Section>
          <LabelsSetting view={view} disabled={busy} save={(labels) => void change.run({ labels })} />
          {hostsOwn && <ClusterSection />}
          {hostsOwn && <InvitationSections />}
          {hostsOwn && <LocalAiSection />}
        </div>
      )}
    </section>
  );
}

function PortRange({ view, disabled, save }: { view: View; disabled: boolean; save(range: [number, number]): void }) {
  const [from, to] = view.settings.portRange;
  const [text, setText] = useState({ from: String(from), to: String(to) });
  useEffect(() => setText({ from: String(from), to: String(to) }), [from, to]);
  const range: [number, number] = [Number(text.from), Number(text.to)];
  const problem = settingsProblem({ portRange: range });
  const unchanged = range[0] === from && range[1] === to;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!problem) save(range);
  };
  return (
    <form className="setting-row" onSubmit={submit} aria-label="Backend ports">
      <label className="field">
        First port
        <input type="number" value={text.from} disabled={disabled} onChange={(e) => setText({ ...text, from: e.target.value })} data-testid="setting-port-from" />
      </label>
      <label className="field">
        Last port
        <input type="number" value={text.to} disabled={disabled} onChange={(e) => setText({ ...text, to: e.target.value })} data-testid="setting-port-to" />
      </label>
      <button type="submit" className="btn small" disabled={disabled || problem !== null || unchanged} data-testid="setting-ports-apply">
        Apply
      </button>
      <span className="muted setting-problem" data-testid="setting-ports-note">
        {view.fixed.includes('portRange') ? FIXED_REASON : (problem ?? 'Backends started from now on use these ports; running ones keep theirs.')}
      </span>
    </form>
  );
}

interface ClusterForm {
  url: string;
  name: string;
  user: string;
  password: string;
  token: string;
  credsFile: string;
  caFile: string;
  insecure: boolean;
}

function formFrom(join: ClusterJoin | null): ClusterForm {
  return {
    url: join?.url ?? '',
    name: join?.name ?? '',
    user: join?.user ?? '',
    password: '',
    token: '',
    credsFile: join?.credsFile ?? '',
    caFile: join?.caFile ?? '',
    insecure: join?.insecure ?? false,
  };
}

/**
 * The cluster the host joins: the host's, not a node's. The desktop app keeps it and joins it at its next start;
 * an agent's comes from its command line, so it is shown, not edited.
 */
function ClusterSection() {
  const view = clusterSetting.use((s) => s.view);
  if (!view) return null;
  return view.fixed === null ? <ClusterForm view={view} /> : <FixedCluster view={view} />;
}

/** An agent's cluster, as its command line set it. */
function FixedCluster({ view }: { view: ClusterSettingsView }) {
  const join = view.joined;
  const secret = (kept: boolean) => (kept ? 'kept (not shown)' : 'none');
  /** [label, value, whether the value is an address or a path, test id] */
  const facts: [string, string, boolean, string][] = join
    ? [
        ['Address', join.url, true, 'cluster-url'],
        ['Node name', join.name ?? '(the host name)', false, 'cluster-name'],
        ['User', join.user ?? 'none', false, 'cluster-user'],
        ['Password', secret(join.hasPassword), false, 'cluster-password'],
        ['Token', secret(join.hasToken), false, 'cluster-token'],
        ['Credentials file', join.credsFile ?? 'none', join.credsFile !== null, 'cluster-credsFile'],
        ['CA file', join.caFile ?? 'none', join.caFile !== null, 'cluster-caFile'],
      ]
    : [];
  return (
    <Section title="Cluster">
      <p data-testid="cluster-state">{join ? `This agent is in the cluster at ${join.url}${join.name ? ` as ${join.name}` : ''}.` : 'This agent runs on its own: it was started in no cluster.'}</p>
      <p className="muted">{join ? view.fixed : 'An agent joins the cluster its command line names; joining one takes a restart of the agent.'}</p>
      {facts.length > 0 && (
        <dl className="settings-facts" aria-label="Cluster this agent joined">
          {facts.map(([label, value, literal, testId]) => (
            <div key={label}>
              <dt>{label}</dt>
              <dd className={literal ? 'mono' : undefined} data-testid={testId}>
                {value}
              </dd>
            </div>
          ))}
        </dl>
      )}
    </Section>
  );
}

/** The desktop app's cluster: what it joins when it next starts. */
function ClusterForm({ view }: { view: ClusterSettingsView }) {
  const [form, setForm] = useState(() => formFrom(view.next));
  useEffect(() => setForm(formFrom(view.next)), [view.next]);
  const request = requestFrom<ClusterJoinRequest>(form);
  const problem = form.url === '' ? 'Give the cluster\'s address, e.g. nats://HOST:4222.' : clusterSetting.problem(request);
  const joined = view.joined ? `This app is in the cluster at ${view.joined.url}${view.joined.name ? ` as ${view.joined.name}` : ''}.` : 'This app runs on its own.';
  const pending = JSON.stringify(view.next) !== JSON.stringify(view.joined) ? ' The change takes effect when Hangar next starts.' : '';
  return (
    <Section title="Cluster">
      <p data-testid="cluster-state">
        {joined}
        {pending && <span className="muted">{pending}</span>}
      </p>
      <HostSettingForm
        setting={clusterSetting}
        label="Cluster to join"
        request={request}
        problem={problem}
        showProblem={form.url !== ''}
        save={{ text: 'Save', testId: 'cluster-save' }}
        forget={view.next ? { text: 'Leave the cluster', testId: 'cluster-leave' } : null}
      >
        {(disabled) => {
          const field = (key: Exclude<keyof ClusterForm, 'insecure'>, label: string, props: { type?: string; placeholder?: string } = {}) => (
            <JoinField {...props} label={label} value={form[key]} disabled={disabled} onChange={(value) => setForm({ ...form, [key]: value })} testId={`cluster-${key}`} />
          );
          return (
            <>
              <label className="field grow">
                Address
                <input
                  value={form.url}
                  disabled={disabled}
                  placeholder="nats://HOST:4222"
                  onChange={(e) => setForm({ ...form, url: e.target.value.trim() })}
                  data-testid="cluster-url"
                />
              </label>
              {field('name', 'Node name', { placeholder: 'hostname' })}
              {field('user', 'User')}
              {field('password', 'Password', { type: 'password', placeholder: view.next?.hasPassword ? 'kept' : '' })}
              {field('token', 'Token', { type: 'password', placeholder: view.next?.hasToken ? 'kept' : '' })}
              {field('credsFile', 'Credentials file')}
              {field('caFile', 'CA file (tls://)')}
              <label className="setting-toggle">
                <input type="checkbox" checked={form.insecure} disabled={disabled} onChange={(e) => setForm({ ...form, insecure: e.target.checked })} />
                <span>Join a server on another machine without credentials</span>
              </label>
            </>
          );
        }}
      </HostSettingForm>
    </Section>
  );
}
