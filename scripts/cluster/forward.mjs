// Forwards bytes between a listening socket and a target, so the host reaches the node's API server without
// any address of the node existing in the host's network namespace: one copy runs inside the node's
// namespace (Unix socket -> API server), one on the host (127.0.0.1 -> Unix socket). TLS passes through.
//
//   node forward.mjs --listen tcp:127.0.0.1:16443|unix:/path --connect tcp:10.244.0.1:6443|unix:/path
import { createConnection, createServer } from 'node:net';
import { rmSync } from 'node:fs';

function endpoint(text) {
  const tcp = /^tcp:([\d.]+):(\d{1,5})$/.exec(text ?? '');
  if (tcp) return { host: tcp[1], port: Number(tcp[2]) };
  const unix = /^unix:(\/.+)$/.exec(text ?? '');
  if (unix) return { path: unix[1] };
  throw new Error(`expected tcp:HOST:PORT or unix:/PATH, got ${text}`);
}

const args = process.argv.slice(2);
const listen = endpoint(args[args.indexOf('--listen') + 1]);
const connect = endpoint(args[args.indexOf('--connect') + 1]);
if (listen.path) rmSync(listen.path, { force: true });

const server = createServer({ pauseOnConnect: true }, (client) => {
  const upstream = createConnection(connect);
  const done = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', done).on('close', done);
  upstream.on('error', done).on('close', done);
  upstream.on('connect', () => {
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  });
});
server.on('error', (error) => {
  process.stderr.write(`forward: ${error.message}\n`);
  process.exit(1);
});
server.listen(
  listen.path ? { path: listen.path } : { host: listen.host, port: listen.port },
  () => {
    process.stdout.write(`forwarding ${JSON.stringify(listen)} -> ${JSON.stringify(connect)}\n`);
  },
);
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
