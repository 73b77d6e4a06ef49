/**
 * A TCP forwarder the partition test controls: it listens on a veth address
 * in the root namespace and forwards to PostgreSQL on 127.0.0.1. `cut()`
 * destroys every connection through it and refuses new ones until `heal()`,
 * as a link that resets would.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface Proxy {
  host: string;
  port: number;
  cut(): void;
  heal(): void;
  close(): Promise<void>;
  /** Connections forwarded so far. */
  connections(): number;
}

export async function startProxy(host: string, target: { host: string; port: number }): Promise<Proxy> {
  const open = new Set<Socket>();
  let severed = false;
  let count = 0;
  const server: Server = createServer((client) => {
    if (severed) {
      client.destroy();
      return;
    }
    count++;
    const upstream = createConnection(target);
    open.add(client);
    open.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  return {
    host, port,
    cut() {
      severed = true;
      for (const socket of [...open]) socket.destroy();
      open.clear();
    },
    heal() {
      severed = false;
    },
    close: () => new Promise((resolve) => {
      for (const socket of open) socket.destroy();
      server.close(() => resolve());
    }),
    connections: () => count,
  };
}
