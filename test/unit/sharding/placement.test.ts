import { placementOf } from '../../../src/framework/sharding/placement.js';

const live = new Set(['a', 'b']);

describe('where the coordinator puts an object', () => {
  it('keeps an object with the member the ring wants', () => {
    expect(placementOf('a', false, 'a', live)).toEqual({ action: 'keep' });
  });

  it('assigns an unlabelled object', () => {
    expect(placementOf(undefined, false, 'b', live)).toEqual({ action: 'assign', member: 'b' });
  });

  it('assigns at once an object labelled with a member that has no Lease', () => {
    expect(placementOf('gone', false, 'b', live)).toEqual({ action: 'assign', member: 'b' });
  });

  it('labels a departed member’s object for the heir that handles it, whatever the ring wants', () => {
    expect(placementOf('gone', true, 'b', live, new Set(), { heir: 'a' })).toEqual({
      action: 'assign',
      member: 'a',
    });
  });

  it('leaves a departed member’s object where it is until its heirs are named', () => {
    expect(placementOf('gone', false, 'b', live, new Set(), { heir: undefined })).toEqual({
      action: 'keep',
    });
  });

  it('asks a live member to drain an object that belongs elsewhere, never relabels it', () => {
    expect(placementOf('a', false, 'b', live)).toEqual({ action: 'drain' });
  });

  it('waits while the live member drains', () => {
    expect(placementOf('a', true, 'b', live)).toEqual({ action: 'keep' });
  });

  it('leaves the objects of a member not yet seen renewing where they are', () => {
    expect(placementOf('c', false, 'b', live, new Set(['c']))).toEqual({ action: 'keep' });
  });

  it('takes back a drain request when the object belongs to its member again', () => {
    expect(placementOf('a', true, 'a', live)).toEqual({ action: 'assign', member: 'a' });
  });
});
