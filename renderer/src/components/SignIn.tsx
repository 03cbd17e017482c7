import { useState } from 'react';
import { Alert } from './Message.tsx';

/** Asks for the agent's token when the URL carried none or the agent rejected it. */
export function SignIn({ onSubmit, rejected }: { onSubmit: (token: string) => void; rejected: boolean }) {
  const [token, setToken] = useState('');
  return (
    <main className="signin">
      <form
        className="card signin-card"
        onSubmit={(e) => {
          e.preventDefault();
          if (token.trim()) onSubmit(token.trim());
        }}
      >
        <div className="brand">
          <span className="brand-mark" aria-hidden="true" />
          Hangar
        </div>
        <h1>Sign in to this agent</h1>
        <p className="muted">
          The agent prints a link with its token when it starts, and keeps the token in <code>state/token</code> under its
          home directory.
        </p>
        {rejected && (
          <Alert>
            The agent rejected the token.
          </Alert>
        )}
        <label className="field">
          <span>Access token</span>
          <input type="password" value={token} onChange={(e) => setToken(e.target.value)} autoFocus autoComplete="off" data-testid="token-input" />
        </label>
        <button type="submit" className="btn primary" disabled={!token.trim()}>
          Connect
        </button>
      </form>
    </main>
  );
}
