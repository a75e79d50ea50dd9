import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'konductor';
import { errorMessage } from './etcd-client.js';
import { BackupNotFoundError } from './storage/index.js';
import type { BackupTarget } from './backup-target.js';

/** Finds the backup an EtcdRestore names; undefined when there is no such restore. */
export type RestoreLookup = (namespace: string, restore: string) => Promise<BackupTarget | undefined>;

/**
 * Serves backups to restore seed Pods over HTTP (`GET /v1/backup/<namespace>/<restore>`), as the
 * original restore operator does: the Pod's init container downloads the snapshot from here, so
 * neither storage credentials nor storage clients ever go into etcd Pods.
 */
export class BackupServer {
  private server: Server | undefined;
  private listening: Promise<string> | undefined;

  constructor(
    private readonly lookup: RestoreLookup,
    private readonly logger: Logger,
    private readonly options: { host: string; port: number; url?: string },
  ) {}

  /** Starts once; resolves with the base URL Pods download from. */
  start(): Promise<string> {
    this.listening ??= new Promise<string>((resolve, reject) => {
      const server = createServer((req, res) => void this.handle(req.url ?? '', req.method ?? 'GET', res));
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => {
        const port = (server.address() as AddressInfo).port;
        this.logger.info({ host: this.options.host, port }, 'serving backups to restore Pods');
        resolve(this.options.url ?? `http://${this.options.host === '0.0.0.0' ? '127.0.0.1' : this.options.host}:${port}`);
      });
      this.server = server;
    });
    return this.listening;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.listening = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(url: string, method: string, res: ServerResponse): Promise<void> {
    const match = /^\/v1\/backup\/([a-z0-9.-]+)\/([a-z0-9.-]+)$/.exec(url);
    if (method !== 'GET' || !match) {
      res.writeHead(404).end('not found: GET /v1/backup/<namespace>/<restore>\n');
      return;
    }
    const [, namespace, restore] = match as unknown as [string, string, string];
    let target: BackupTarget | undefined;
    try {
      target = await this.lookup(namespace, restore);
      if (!target) {
        res.writeHead(404).end(`no EtcdRestore ${namespace}/${restore}\n`);
        return;
      }
      const stream = await target.storage.read(target.path);
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      await pipeline(stream, res);
      this.logger.info({ namespace, restore, backup: target.storage.describe(target.path) }, 'served a backup to a restore Pod');
    } catch (error) {
      const status = error instanceof BackupNotFoundError ? 404 : 500;
      this.logger.warn({ namespace, restore, err: errorMessage(error) }, 'could not serve a backup');
      if (!res.headersSent) res.writeHead(status).end(`${errorMessage(error)}\n`);
      else res.destroy();
    } finally {
      target?.close();
    }
  }
}
