import { ApiError } from '../../../src/framework/api/api-error.js';

const error = (status: number, reason?: string) =>
  new ApiError(status, `GET /x: ${status}`, reason);

describe('classifying an ApiError', () => {
  test.each([
    ['isNotFound', 404],
    ['isConflict', 409],
    ['isGone', 410],
    ['isInvalid', 422],
  ] as const)('%s is true for %i alone', (kind, status) => {
    expect([400, 404, 409, 410, 422, 500].filter((code) => error(code)[kind])).toEqual([status]);
  });

  test('isAlreadyExists needs the 409 and the reason AlreadyExists', () => {
    expect([
      error(409, 'AlreadyExists').isAlreadyExists,
      error(409, 'Conflict').isAlreadyExists,
      error(409).isConflict,
    ]).toEqual([true, false, true]);
  });

  test('the static forms accept anything a catch block holds', () => {
    expect([
      ApiError.isNotFound(error(404)),
      ApiError.isNotFound(new Error('404')),
      ApiError.isNotFound(undefined),
      ApiError.isConflict({ status: 409 }),
    ]).toEqual([true, false, false, false]);
    expect([
      ApiError.isGone(error(410)),
      ApiError.isInvalid(error(422)),
      ApiError.isAlreadyExists(error(409, 'AlreadyExists')),
    ]).toEqual([true, true, true]);
  });
});
