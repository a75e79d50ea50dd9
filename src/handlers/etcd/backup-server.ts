import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'konductor';
import { errorMessage } from './etcd-client.js';
import { RateLimiter } from './rate-limit.js';
import { SnapshotTrailerCheck, type SnapshotFingerprint } from './snapshot-trailer.js';
import { BackupNotFoundError } from './storage/index.js';

/** An open backup, to be streamed once. */
export interface OpenedBackup {
  stream: Readable;
  /** Releases the storage client. */
  close(): void;
}

/** What the server needs to know about one EtcdRestore to decide whether to serve it. */
export interface RestoreDownload {
  /** The secret the download URL must carry. */
  token: string;
  /**
   * The uid of the seed member Pod waiting for this backup; undefined once none waits (the restore
   * is over). Asked only after the token matched, so a caller without it causes no Pod listing.
   */
  pendingSeed(): Promise<string | undefined>;
  /** Size and SHA-256 recorded when the restore checked the backup: only exactly that file is served. */
  expected: SnapshotFingerprint;
  /** Opens the backup from the storage recorded when the restore started. */
  open(): Promise<OpenedBackup>;
}

/** Finds the download state of an EtcdRestore; undefined when there is no such restore or it has nothing to serve. */
export type RestoreLookup = (
  namespace: string,
  restore: string,
) => Promise<RestoreDownload | undefined>;

const PATH = /^\/v1\/backup\/([a-z0-9.-]{1,253})\/([a-z0-9.-]{1,253})$/;
/** Tokens are 32 random bytes in hex: anything else is refused before any lookup. */
const TOKEN = /^[0-9a-f]{64}$/;
/** Requests a second per remote address; more get 429. A seed downloads once. */
export const BACKUP_SERVER_RATE_PER_SECOND = 10;

/** `<base>/v1/backup/<namespace>/<restore>?token=<token>`: the URL a restore's seed member downloads from. */
export function downloadURL(
  baseURL: string,
  namespace: string,
  restore: string,
  token: string,
): string {
  return `${baseURL}/v1/backup/${encodeURIComponent(namespace)}/${encodeURIComponent(restore)}?token=${encodeURIComponent(token)}`;
}

/** Replaces the token in a text that may hold a download URL (logs, Events, Pod messages). */
export function redactToken(text: string): string {
  return text.replace(/([?&]token=)[^&\s"']+/g, '$1<redacted>');
}

/**
 * Serves backups to restore seed Pods over HTTP, as the original restore operator does: the Pod's
 * init container downloads the snapshot from here, so neither storage credentials nor storage
 * clients go into etcd Pods. Unlike the original, a backup is served only
 * - with the restore's random token: no or an ill-formed token is 403 before any API call; an
 *   unknown restore and a wrong token get the same 403, so the answer does not tell which restores exist,
 * - at most {@link BACKUP_SERVER_RATE_PER_SECOND} requests a second per remote address (else 429),
 * - while that restore's seed member is pending, and once per seed (else 404),
 * - from the storage recorded when the restore started, and only the file it checked then: the
 *   stream fails before its last bytes when the size or SHA-256 differ.
 */
export class BackupServer {
  private server: Server | undefined;
  private listening: Promise<string> | undefined;
  /** Seeds served, `<namespace>/<restore>/<pod uid>`: one download each. */
  private readonly served = new Set<string>();
  private readonly limiter = new RateLimiter(BACKUP_SERVER_RATE_PER_SECOND);

  constructor(
    private readonly lookup: RestoreLookup,
    private readonly logger: Logger,
    private readonly options: { host: string; port: number; url?: string },
  ) {}

  /** Starts once; resolves with the base URL Pods download from. */
  start(): Promise<string> {
    this.listening ??= new Promise<string>((resolve, reject) => {
      const server = createServer(
        (req, res) =>
          void this.handle(req.url ?? '', req.method ?? 'GET', req.socket.remoteAddress ?? '', res),
      );
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => {
        const port = (server.address() as AddressInfo).port;
        this.logger.info({ host: this.options.host, port }, 'serving backups to restore Pods');
        resolve(
          this.options.url ??
            `http://${this.options.host === '0.0.0.0' ? '127.0.0.1' : this.options.host}:${port}`,
        );
      });
      this.server = server;
    });
    return this.listening;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.listening = undefined;
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  private async handle(
    rawURL: string,
    method: string,
    remote: string,
    res: ServerResponse,
  ): Promise<void> {
    if (!this.limiter.take(remote)) {
      res.writeHead(429, { 'Retry-After': '1' }).end('too many requests\n');
      return;
    }
    let url: URL;
    try {
      url = new URL(rawURL, 'http://backup-server');
    } catch {
      res.writeHead(400).end('bad request\n');
      return;
    }
    const match = PATH.exec(url.pathname);
    if (method !== 'GET' || !match) {
      res.writeHead(404).end('not found: GET /v1/backup/<namespace>/<restore>?token=<token>\n');
      return;
    }
    const [, namespace, restore] = match as unknown as [string, string, string];
    const token = url.searchParams.get('token');
    const refuse = (): void => {
      this.logger.warn(
        { namespace, restore },
        'refused a backup download without the restore token',
      );
      res
        .writeHead(403)
        .end(`the download URL of EtcdRestore ${namespace}/${restore} needs its token\n`);
    };
    if (token === null || !TOKEN.test(token)) {
      refuse();
      return;
    }
    let opened: OpenedBackup | undefined;
    try {
      const download = await this.lookup(namespace, restore);
      // No such restore and a wrong token look the same from outside.
      if (!download || !sameToken(token, download.token)) {
        refuse();
        return;
      }
      const pendingSeed = await download.pendingSeed();
      const key = `${namespace}/${restore}/${pendingSeed ?? ''}`;
      if (pendingSeed === undefined || this.served.has(key)) {
        res
          .writeHead(404)
          .end(`EtcdRestore ${namespace}/${restore}: no seed member is waiting for this backup\n`);
        return;
      }
      this.served.add(key);
      opened = await download.open();
      res.writeHead(200, {
        'Content-Type': 'application/octet-stream',
        'Content-Length': String(download.expected.size),
      });
      await pipeline(opened.stream, new SnapshotTrailerCheck(download.expected), res);
      this.logger.info(
        { namespace, restore, bytes: download.expected.size },
        'served a backup to a restore seed Pod',
      );
    } catch (error) {
      const status = error instanceof BackupNotFoundError ? 404 : 500;
      this.logger.warn(
        { namespace, restore, err: redactToken(errorMessage(error)) },
        'could not serve a backup',
      );
      if (!res.headersSent) res.writeHead(status).end(`${redactToken(errorMessage(error))}\n`);
      else res.destroy();
    } finally {
      opened?.close();
    }
  }
}

/** Constant-time comparison, so the token cannot be guessed byte by byte from response times. */
function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
