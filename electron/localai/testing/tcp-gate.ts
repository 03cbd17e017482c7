// A TCP relay in front of a LocalAI (tests only): the network between Hangar and LocalAI, which can be cut and
// restored on the same port while LocalAI and its models run on.
import { once } from 'node:events';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export class TcpGate {
  private server: Server | null = null;
  private port = 0;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly targetPort: number) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Listens (again, on the same port once it has one); nothing when it listens already. */
  async open(): Promise<void> {
    if (this.server) return;
    const server = (this.server = createServer((client) => {
      const upstream = createConnection(this.targetPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    }));
    server.listen(this.port, '127.0.0.1');
    await once(server, 'listening');
    this.port = (server.address() as AddressInfo).port;
  }

  /** Nothing listens on the gate's port any more: connections are refused. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise((done) => server.close(done));
  }
}
