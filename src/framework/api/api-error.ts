/** The Kubernetes `Status` object an API server returns with an error. */
export interface KubeStatus {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: unknown;
}

/**
 * A failed API request: HTTP `status` (0 when no response arrived), the server's `reason` and
 * `message` when its body was a `Status`, and `retryAfterSeconds` from a `Retry-After` header.
 */
export class ApiError extends Error {
  /** Always `'ApiError'`. */
  override readonly name = 'ApiError';

  /**
   * @param status The HTTP status; 0 when no response arrived.
   * @param reason The `reason` of the server's `Status` body, such as `NotFound` or `Conflict`.
   * @param retryAfterSeconds The `Retry-After` header in seconds, when the server sent one.
   * @param body The raw response body, for logging; undefined when there was no response.
   */
  constructor(
    readonly status: number,
    message: string,
    readonly reason?: string,
    readonly retryAfterSeconds?: number,
    readonly body?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** Same as `status`, for code written against client-node's `ApiException.code`. */
  get code(): number {
    return this.status;
  }

  /** Builds an error from a response; the body may be a `Status`, HTML from a proxy, or nothing. */
  static fromResponse(
    status: number,
    body: string,
    headers: Record<string, string | string[] | undefined>,
    what: string,
  ): ApiError {
    let parsed: KubeStatus | undefined;
    try {
      const candidate = JSON.parse(body) as unknown;
      if (candidate && typeof candidate === 'object') parsed = candidate as KubeStatus;
    } catch {
      // Not JSON (a proxy's HTML page, an empty body): classified by the status code alone.
    }
    const retryAfter = parseRetryAfter(headers['retry-after']);
    const detail = parsed?.message ?? (body.trim().slice(0, 200) || `HTTP ${status}`);
    return new ApiError(status, `${what}: ${status} ${detail}`, parsed?.reason, retryAfter, body);
  }

  /** A request that got no response (connection refused, reset, timeout). */
  static fromNetwork(error: unknown, what: string): ApiError {
    const text =
      error instanceof Error
        ? `${(error as NodeJS.ErrnoException).code ?? error.name}: ${error.message}`
        : String(error);
    return new ApiError(0, `${what}: ${text}`, undefined, undefined, undefined, { cause: error });
  }

  // Classifying an answer, for `catch` blocks: `if (ApiError.isNotFound(error)) return;`.

  /** 404: the object (or its namespace, or the resource) does not exist. */
  get isNotFound(): boolean {
    return this.status === 404;
  }

  /** 409: a conflict: a stale `resourceVersion`, a failed precondition, a server-side apply conflict, or an existing name. */
  get isConflict(): boolean {
    return this.status === 409;
  }

  /** 410: a `resourceVersion` or `continue` token too old to serve: list again from the start. */
  get isGone(): boolean {
    return this.status === 410;
  }

  /** 409 with reason `AlreadyExists`: a create found an object of that name. */
  get isAlreadyExists(): boolean {
    return this.status === 409 && this.reason === 'AlreadyExists';
  }

  /** 422: the server refused the object as invalid (its `message` names the fields). */
  get isInvalid(): boolean {
    return this.status === 422;
  }

  /** Whether `error` is an {@link ApiError} answering 404. */
  static isNotFound(error: unknown): error is ApiError {
    return error instanceof ApiError && error.isNotFound;
  }

  /** Whether `error` is an {@link ApiError} answering 409. */
  static isConflict(error: unknown): error is ApiError {
    return error instanceof ApiError && error.isConflict;
  }

  /** Whether `error` is an {@link ApiError} answering 410. */
  static isGone(error: unknown): error is ApiError {
    return error instanceof ApiError && error.isGone;
  }

  /** Whether `error` is an {@link ApiError} answering 409 AlreadyExists. */
  static isAlreadyExists(error: unknown): error is ApiError {
    return error instanceof ApiError && error.isAlreadyExists;
  }

  /** Whether `error` is an {@link ApiError} answering 422. */
  static isInvalid(error: unknown): error is ApiError {
    return error instanceof ApiError && error.isInvalid;
  }
}

/**
 * The longest `Retry-After` we honour. An API server asks for seconds; anything that asks for hours
 * (a broken or hostile proxy in between) would park every watch and retry that long.
 */
export const MAX_RETRY_AFTER_SECONDS = 600;

/** `Retry-After` in seconds (delta-seconds or an HTTP date), capped at `MAX_RETRY_AFTER_SECONDS`, or undefined. */
export function parseRetryAfter(value: string | string[] | undefined): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw.trim() === '') return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(0, seconds));
  const date = Date.parse(raw);
  return Number.isNaN(date)
    ? undefined
    : Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(0, (date - Date.now()) / 1000));
}

/** True for an HTTP 410 Gone, whatever shape it came in. */
export function isGone(error: unknown): boolean {
  return error instanceof ApiError && error.status === 410;
}

/**
 * The delay before retrying after `error`: at least what the server asked for with `Retry-After`
 * (a 429 or 503), otherwise `fallbackMs` (the caller's own backoff).
 */
export function retryDelayMs(error: unknown, fallbackMs: number): number {
  const asked = error instanceof ApiError ? error.retryAfterSeconds : undefined;
  return asked === undefined ? fallbackMs : Math.max(asked * 1000, fallbackMs);
}
