import { createServer } from 'node:net';

/** Whether something already listens on the URL's port: we try to listen there ourselves, briefly. */
export function portInUse(url: string): Promise<boolean> {
  let host: string;
  let port: number;
  try {
    const parsed = new URL(url);
    host = parsed.hostname.replace(/^\[|\]$/g, '');
    port = Number(parsed.port);
  } catch {
    return Promise.resolve(false); // etcd itself will reject the URL, with a better message
  }
  if (!port) return Promise.resolve(false);
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'EADDRINUSE'));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(false)));
  });
}
