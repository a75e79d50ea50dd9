/** Requests to a webhook server as the API server or anyone on the Pod network makes them: whole, from another address, with a client certificate, or stalled. */
import { request as httpsRequest } from 'node:https';
import { connect as netConnect } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import type { KubeObject } from '../../src/framework/index.js';

/** An answer to one request. */
export interface Answer {
  status: number;
  body: string;
  /** The common name of the certificate the server presented. */
  servedBy: string;
  retryAfter?: string;
}

/** How a request is made. */
export interface SendOptions {
  method?: string;
  /** CAs trusted for the server's certificate. */
  ca: string[];
  /** The local address to send from (another loopback address plays another Pod). */
  localAddress?: string;
  /** A client certificate and key (PEM) to present. */
  client?: { cert: string; key: string };
  /** Do not check the server's certificate (a caller that only wants to reach the port). */
  insecure?: boolean;
}

/** One request on a connection of its own. */
export function send(
  port: number,
  path: string,
  body: unknown,
  options: SendOptions,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    const { method = 'POST', ca, localAddress, client, insecure = false } = options;
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method,
        ca,
        rejectUnauthorized: !insecure,
        agent: false,
        localAddress,
        ...client,
        headers: { 'Content-Type': 'application/json' },
      },
      (res) => {
        const servedBy = String((res.socket as TLSSocket).getPeerCertificate().subject.CN);
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        const retryAfter = res.headers['retry-after'];
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            servedBy,
            ...(retryAfter ? { retryAfter } : {}),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** An AdmissionReview of a CREATE of `object` in namespace team-a. */
export function admissionReview(object: KubeObject, uid = 'req-1'): unknown {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: 'example.com', version: 'v1', kind: 'Widget' },
      resource: { group: 'example.com', version: 'v1', resource: 'widgets' },
      namespace: 'team-a',
      operation: 'CREATE',
      userInfo: { username: 'alice' },
      object,
    },
  };
}

/** A request whose body stops short of what it declared. */
export interface StalledRequest {
  /** The status line's code once the server answers (0 if it closes without answering), and that the connection was closed. */
  answered: Promise<{ status: number; closed: true }>;
  /** Resolves once the bytes sent have left this side. */
  sent: Promise<void>;
  /** Closes the connection from this side. */
  close(): void;
}

/**
 * Opens a TLS connection from `localAddress`, sends a POST declaring `declared` body bytes and sends
 * only `body`, then waits: the slow client that holds a server's buffers.
 */
export function stallRequest(
  port: number,
  path: string,
  declared: number,
  body: Buffer,
  options: Omit<SendOptions, 'method'>,
): StalledRequest {
  const tcp = netConnect({ host: '127.0.0.1', port, localAddress: options.localAddress });
  tcp.on('error', () => undefined);
  const socket = connect({
    socket: tcp,
    host: '127.0.0.1',
    ca: options.ca,
    rejectUnauthorized: options.insecure !== true,
    ...options.client,
  });
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  const answered = new Promise<{ status: number; closed: true }>((resolve) => {
    socket.on('close', () =>
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0), closed: true }),
    );
  });
  socket.on('error', () => undefined);
  const sent = new Promise<void>((resolve) => {
    socket.once('secureConnect', () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`,
      );
      socket.write(body, () => resolve());
    });
  });
  return { answered, sent, close: () => socket.destroy() };
}
