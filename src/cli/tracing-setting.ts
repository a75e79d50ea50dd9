// Whether `konductor run` traces: its flag and the OpenTelemetry SDK's standard variables.
import { UsageError } from './validators.js';

/** What the flag and the environment ask for, and what the operator should say about it. */
export interface TracingSetting {
  on: boolean;
  /** Lines to log as warnings: a flag overruled by the environment. */
  warnings: string[];
}

const PROTOCOLS = ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'] as const;

/**
 * Off unless `--tracing on` or `OTEL_TRACES_EXPORTER=otlp`; `OTEL_SDK_DISABLED=true` and
 * `OTEL_TRACES_EXPORTER=none` win over the flag. The endpoint variable alone does not turn it on:
 * platforms set it in every Pod, and an operator must not start paying for traces unasked.
 * @throws {@link UsageError} for an exporter or protocol other than OTLP over HTTP with JSON.
 */
export function tracingSetting(
  flag: 'on' | 'off' | undefined,
  env: Readonly<Record<string, string | undefined>>,
): TracingSetting {
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true';
  if (exporter !== undefined && exporter !== '' && exporter !== 'otlp' && exporter !== 'none')
    throw new UsageError(
      `OTEL_TRACES_EXPORTER=${JSON.stringify(env.OTEL_TRACES_EXPORTER)} is not supported: konductor exports traces with otlp (or none)`,
    );
  const wanted = flag === 'on' || (flag === undefined && exporter === 'otlp');
  if (!wanted) return { on: false, warnings: [] };
  if (disabled || exporter === 'none') {
    const why = disabled ? 'OTEL_SDK_DISABLED=true' : 'OTEL_TRACES_EXPORTER=none';
    return { on: false, warnings: [`tracing stays off: ${why} overrules --tracing on`] };
  }
  for (const name of PROTOCOLS) {
    const protocol = env[name]?.trim();
    if (protocol !== undefined && protocol !== '' && protocol !== 'http/json')
      throw new UsageError(
        `${name}=${JSON.stringify(protocol)} is not supported: konductor exports OTLP over HTTP with JSON (http/json)`,
      );
  }
  return { on: true, warnings: [] };
}
