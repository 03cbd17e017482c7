import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { WS_PATH } from '../../shared/wire.ts';
import { App } from './App.tsx';
import { electronTransport } from './bridge/electron.ts';
import { forgetToken, rememberToken, takeToken } from './bridge/token.ts';
import { createWebSocketTransport } from './bridge/websocket.ts';
import { startClock } from './state/clock.ts';
import { startSync } from './state/sync.ts';
import './styles.css';

const embedded = electronTransport();
const initialToken = embedded ? null : takeToken();
let offeredToken = initialToken !== null;

const transport =
  embedded ??
  createWebSocketTransport({
    url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${WS_PATH}`,
    token: initialToken,
  });

transport.onStatus((status) => {
  if (status === 'unauthorized') forgetToken();
});

const sync = startSync(transport);
startClock();

function signIn(token: string) {
  offeredToken = true;
  rememberToken(token);
  transport.signIn?.(token);
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App transport={transport} onSignIn={signIn} onRetry={() => void sync.refetch()} tokenRejected={() => offeredToken} />
  </StrictMode>,
);
