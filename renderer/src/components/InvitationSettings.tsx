import { useEffect, useState } from 'react';
import type { ClusterInviteRequest } from '../../../shared/api.ts';
import { parseLabels } from '../../../shared/selector.ts';
import type { ClusterInvitation, ClusterInvitationsView, InvitedRole } from '../../../shared/types.ts';
import { inviteProblem, joinWith, loadInvitations, makeInvitation, useInvitations } from '../state/invitations.ts';
import { Section } from './SettingControls.tsx';
import { useAction } from './useAction.ts';
import { ActionButton } from './ActionButton.tsx';
import { Alert } from './Message.tsx';
import { invitationToken } from '../../../shared/invitation-line.ts';

const EXPIRIES: [string, number][] = [['30 minutes', 30], ['1 hour', 60], ['1 day', 1440], ['7 days', 10_080]];

/** Settings → Cluster's invitations: an admin's home invites machines; a home in no cluster joins with one. */
export function InvitationSections() {
  const view = useInvitations((s) => s.view);
  const load = useAction(loadInvitations);
  useEffect(() => void load.run(), [load.run]);
  if (!view) return null;
  return (
    <>
      <InviteSection view={view} />
      <JoinSection view={view} />
    </>
  );
}

function InviteSection({ view }: { view: ClusterInvitationsView }) {
  const [form, setForm] = useState({ role: 'node' as InvitedRole, name: '', labels: '', expiresMinutes: 60 });
  const [made, setMade] = useState<ClusterInvitation | null>(null);
  const invite = useAction(makeInvitation);
  if (!view.admin) {
    return (
      <Section title="Invite a machine">
        <p className="muted" data-testid="invite-not-admin">
          Only the home that made the cluster invites machines: run <code>hangar cluster init</code> on it to make one.
        </p>
      </Section>
    );
  }
  let request: ClusterInviteRequest | null = null;
  let problem: string | null;
  try {
    request = { role: form.role, labels: parseLabels(form.labels), expiresMinutes: form.expiresMinutes, ...(form.name && { name: form.name }) };
    problem = inviteProblem(request);
  } catch (error) {
    problem = (error as Error).message;
  }
  return (
    <Section title="Invite a machine">
      <p className="muted">The invitation is one command, used once before it expires. It holds the machine&apos;s credential: send it privately.</p>
      <form
        className="setting-row"
        aria-label="Invite a machine"
        onSubmit={(e) => {
          e.preventDefault();
          if (request && !problem) void invite.run(request).then((answer) => setMade(answer ?? null));
        }}
      >
        <label className="field">
          Role
          <select value={form.role} disabled={invite.pending} onChange={(e) => setForm({ ...form, role: e.target.value as InvitedRole })} data-testid="invite-role">
            <option value="node">node: serves its backends</option>
            <option value="viewer">viewer: calls the nodes</option>
            <option value="node+viewer">node and viewer</option>
          </select>
        </label>
        <label className="field">
          Name
          <input value={form.name} placeholder="ROLE-xxxx" disabled={invite.pending} onChange={(e) => setForm({ ...form, name: e.target.value.trim() })} data-testid="invite-name" />
        </label>
        <label className="field">
          Labels
          <input value={form.labels} placeholder="gpu=nvidia, zone=a" disabled={invite.pending} onChange={(e) => setForm({ ...form, labels: e.target.value })} data-testid="invite-labels" />
        </label>
        <label className="field">
          Expires after
          <select value={form.expiresMinutes} disabled={invite.pending} onChange={(e) => setForm({ ...form, expiresMinutes: Number(e.target.value) })} data-testid="invite-expires">
            {EXPIRIES.map(([label, minutes]) => (
              <option key={minutes} value={minutes}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <ActionButton submit className="btn small primary" unavailable={invite.pending ? 'Inviting…' : problem} data-testid="invite-make">
          Invite
        </ActionButton>
        {problem && <span className="muted setting-problem">{problem}</span>}
      </form>
      {invite.error && (
        <Alert>
          {invite.error}
        </Alert>
      )}
      {made && <MadeInvitation made={made} />}
    </Section>
  );
}

function MadeInvitation({ made }: { made: ClusterInvitation }) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = () =>
    navigator.clipboard.writeText(made.command).then(
      () => setCopied('Copied.'),
      () => setCopied('The clipboard refused it: select the command and copy it.'),
    );
  return (
    <div className="invitation" data-testid="invite-made">
      <p>
        Run this on the machine to join as {made.role} <strong>{made.name}</strong>, before {new Date(made.expires).toLocaleString()}:
      </p>
      <div className="invitation-command">
        <code className="mono" data-testid="invite-command">
          {made.command}
        </code>
        <button type="button" className="btn small" onClick={() => void copy()} data-testid="invite-copy">
          Copy
        </button>
      </div>
      {copied && <p className="muted">{copied}</p>}
    </div>
  );
}

function JoinSection({ view }: { view: ClusterInvitationsView }) {
  const [token, setToken] = useState('');
  const join = useAction(joinWith);
  const member = view.member;
  return (
    <Section title="Join with an invitation">
      {member ? (
        <p data-testid="join-state">
          This home joined cluster {member.cluster} at <span className="mono">{member.url}</span> as {member.name} ({member.role}).
          {view.restart && <span className="muted"> Hangar connects with it when it next starts (restart the app, or run hangar agent again).</span>}
        </p>
      ) : (
        <form
          className="setting-row"
          aria-label="Join with an invitation"
          onSubmit={(e) => {
            e.preventDefault();
            // A command pasted whole is taken as its token.
            void join.run(invitationToken(token)).then(() => setToken(''));
          }}
        >
          <label className="field grow">
            Invitation
            <input
              type="password"
              autoComplete="off"
              value={token}
              placeholder="HANGAR_JOIN_TOKEN=hjoin1.… hangar agent (or the token alone)"
              disabled={join.pending}
              onChange={(e) => setToken(e.target.value)}
              data-testid="join-token"
            />
          </label>
          <ActionButton submit className="btn small primary" unavailable={join.pending ? 'Joining…' : token.trim() === '' ? 'Paste the invitation first.' : null} data-testid="join-submit">
            {join.pending ? 'Joining…' : 'Join'}
          </ActionButton>
        </form>
      )}
      {join.error && (
        <Alert testId="join-error">
          {join.error}
        </Alert>
      )}
    </Section>
  );
}
