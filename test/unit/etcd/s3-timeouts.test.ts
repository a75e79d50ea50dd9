import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { S3Storage } from '../../../src/handlers/etcd/storage/s3-storage.js';

describe('S3 calls have a request timeout', () => {
  let server: Server;
  const sockets: Socket[] = [];
  let endpoint: string;

  beforeAll(async () => {
    // Accepts connections and never answers: without a timeout, a call would wait forever.
    server = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('a list against an endpoint that never answers fails, naming the endpoint, instead of hanging', async () => {
    const storage = new S3Storage({
      bucket: 'backups',
      endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      requestTimeoutMs: 300,
    });
    try {
      await expect(storage.list('x')).rejects.toThrow(/S3 list of s3:\/\/backups\/x\* failed/);
    } finally {
      storage.destroy();
    }
  }, 30_000);
});
