import { tracingSetting } from '../../../src/cli/tracing-setting.js';
import { UsageError } from '../../../src/cli/validators.js';

describe('whether konductor run traces', () => {
  test.each([
    [undefined, {}, false],
    ['on', {}, true],
    ['off', {}, false],
    [undefined, { OTEL_TRACES_EXPORTER: 'otlp' }, true],
    ['off', { OTEL_TRACES_EXPORTER: 'otlp' }, false],
    [undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
    ['on', { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, true],
  ] as const)('--tracing %s with %j: on is %s', (flag, env, on) => {
    expect(tracingSetting(flag, env)).toEqual({ on, warnings: [] });
  });

  test.each([
    [{ OTEL_SDK_DISABLED: 'true' }, 'OTEL_SDK_DISABLED=true'],
    [{ OTEL_TRACES_EXPORTER: 'none' }, 'OTEL_TRACES_EXPORTER=none'],
  ])('%j overrules --tracing on, with a warning', (env, why) => {
    expect(tracingSetting('on', env)).toEqual({
      on: false,
      warnings: [`tracing stays off: ${why} overrules --tracing on`],
    });
  });

  test.each([
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER="zipkin" is not supported'],
    [
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      'OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported',
    ],
    [
      { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' },
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http/protobuf" is not supported',
    ],
  ])('%j is refused with a usage error naming it', (env, message) => {
    expect(() => tracingSetting('on', env)).toThrow(UsageError);
    expect(() => tracingSetting('on', env)).toThrow(message);
  });
});
