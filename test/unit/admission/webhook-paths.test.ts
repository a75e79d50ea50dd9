import { describe, expect, it } from '@jest/globals';
import { pathSegment, webhookPath } from '../../../src/framework/admission/webhook-paths.js';

/** The API server's check on each segment of a Service webhook's path (a lowercase DNS subdomain). */
const acceptedByApiServer = (segment: string) =>
  segment.length <= 253 &&
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(segment);

describe('webhook paths', () => {
  it('keeps an id the API server already accepts as it is', () => {
    expect(webhookPath({ kind: 'validate', id: 'widgets.check' })).toBe('/validate/widgets.check');
  });

  it('turns a handler id with capitals into a lowercase segment the API server accepts', () => {
    const path = webhookPath({ kind: 'validate', id: 'EtcdAdmission.cluster' });
    expect(path).toMatch(/^\/validate\/etcdadmission\.cluster-[0-9a-f]{8}$/);
    expect(acceptedByApiServer(path.split('/')[2]!)).toBe(true);
  });

  it('gives ids that differ only in case different paths', () => {
    expect(pathSegment('Widgets.check')).not.toBe(pathSegment('widgets.Check'));
  });

  it.each(['a/b', '..', '-x-', 'Ü.ñ', '__', 'x'.repeat(400), 'a..b', 'a.-b'])(
    'makes an accepted segment of %p',
    (id) => {
      expect(acceptedByApiServer(pathSegment(id))).toBe(true);
    },
  );
});
