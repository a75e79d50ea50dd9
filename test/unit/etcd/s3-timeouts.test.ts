import {
  createServer as createHttpServer,
  type Server as HttpServer,
  type ServerResponse,
} from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
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

describe('S3 reads have a total deadline and a size limit', () => {
  let server: HttpServer;
  let endpoint: string;
  const responses: ServerResponse[] = [];
  const timers: NodeJS.Timeout[] = [];

  beforeAll(async () => {
    // GetObject answers: /drip/... sends one byte every 50 ms (the idle timeout never fires),
    // /huge/... announces 10 GiB, /chunked/... streams without a length.
    server = createHttpServer((req, res) => {
      responses.push(res);
      if (req.url?.includes('/drip/')) {
        res.writeHead(200, {
          'Content-Type': 'application/octet-stream',
          'Content-Length': '100000',
        });
        timers.push(setInterval(() => res.write(Buffer.from([1])), 50));
      } else if (req.url?.includes('/huge/')) {
        res.writeHead(200, {
          'Content-Type': 'application/octet-stream',
          'Content-Length': String(10 * 1024 ** 3),
        });
        res.write(Buffer.alloc(16));
      } else {
        res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
        res.write(Buffer.alloc(4096));
        res.write(Buffer.alloc(4096));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    for (const timer of timers) clearInterval(timer);
    for (const res of responses) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const storage = (limits: { deadlineMs?: number; maxBytes?: number }): S3Storage =>
    new S3Storage({
      bucket: 'backups',
      endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      requestTimeoutMs: 60_000,
      ...limits,
    });

  const drain = async (stream: Readable): Promise<number> => {
    let bytes = 0;
    for await (const chunk of stream) bytes += (chunk as Buffer).length;
    return bytes;
  };

  it('a body that drips a byte at a time fails at the deadline, though data keeps moving', async () => {
    const s3 = storage({ deadlineMs: 500 });
    try {
      await expect(drain(await s3.read('drip/snapshot.db'))).rejects.toThrow(
        /download of s3:\/\/backups\/drip\/snapshot.db: not complete after \d+ s \(the transfer deadline\)/,
      );
    } finally {
      s3.destroy();
    }
  }, 30_000);

  it('an object announced larger than the size limit is refused before its body is read', async () => {
    const s3 = storage({ maxBytes: 1024 ** 3 });
    try {
      await expect(s3.read('huge/snapshot.db')).rejects.toThrow(
        /s3:\/\/backups\/huge\/snapshot.db is 10737418240 bytes, more than the snapshot size limit/,
      );
    } finally {
      s3.destroy();
    }
  }, 30_000);

  it('a body without a length fails once it passes the size limit', async () => {
    const s3 = storage({ maxBytes: 5000 });
    try {
      await expect(drain(await s3.read('chunked/snapshot.db'))).rejects.toThrow(
        /more than 5000 bytes/,
      );
    } finally {
      s3.destroy();
    }
  }, 30_000);
});
