import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { waitFor } from './wait-for.js';

/** One span as an OTLP/HTTP JSON export carries it, with its attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** The exporting process's resource attributes (`service.name`...). */
  resource: Record<string, string | number | boolean>;
}

/** An OTLP/HTTP receiver on loopback, as a collector would be: the real exporter sends to it. */
export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>/v1/traces`. */
  url: string;
  spans(): ReceivedSpan[];
  /** Waits until `predicate` holds over the spans received so far. */
  waitForSpans(
    predicate: (spans: ReceivedSpan[]) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

interface JsonValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface JsonAttribute {
  key: string;
  value: JsonValue;
}
interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: JsonAttribute[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number };
}
interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: JsonAttribute[] };
    scopeSpans?: { spans?: JsonSpan[] }[];
  }[];
}

function plain(attributes: JsonAttribute[] | undefined): Record<string, string | number | boolean> {
  const result: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes ?? []) {
    if (value.stringValue !== undefined) result[key] = value.stringValue;
    else if (value.intValue !== undefined) result[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) result[key] = value.doubleValue;
    else if (value.boolValue !== undefined) result[key] = value.boolValue;
  }
  return result;
}

/** Spans of an OTLP `ExportTraceServiceRequest` in its JSON encoding. */
export function decodeExport(request: ExportRequest): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = plain(resourceSpans.resource?.attributes);
    for (const scope of resourceSpans.scopeSpans ?? [])
      for (const span of scope.spans ?? [])
        spans.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? '',
          name: span.name,
          kind: span.kind,
          startNs: BigInt(span.startTimeUnixNano),
          endNs: BigInt(span.endTimeUnixNano),
          attributes: plain(span.attributes),
          links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
          statusCode: span.status?.code ?? 0,
          resource,
        });
  }
  return spans;
}

async function bodyOf(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return request.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
}

/** Starts a receiver accepting `POST /v1/traces` in OTLP JSON; anything else is answered 415 or 404. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const server = createServer((request, response) => {
    if (request.method !== 'POST' || request.url !== '/v1/traces') {
      response.writeHead(404).end();
      return;
    }
    if (!String(request.headers['content-type']).startsWith('application/json')) {
      response.writeHead(415).end();
      return;
    }
    bodyOf(request).then(
      (body) => {
        received.push(...decodeExport(JSON.parse(body.toString('utf8')) as ExportRequest));
        response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      },
      () => response.writeHead(400).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans: () => [...received],
    waitForSpans: async (predicate, what, timeoutMs = 20_000) => {
      await waitFor(() => predicate(received), { what, timeoutMs });
      return [...received];
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
