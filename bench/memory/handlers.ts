// The memory bench's operator, written as a user writes one (a TypeScript file importing `konductor`)
// and run as a user runs it (`konductor run bench/memory/handlers.ts`): a create handler that copies
// spec.idx to status.seen, as the catch-up bench's does.
import { defineKind, on, type ChangeContext, type CustomObject } from 'konductor';

type BenchObject = CustomObject<{ idx?: number }, { seen?: number }>;
const BenchObject = defineKind<BenchObject>(
  'bench.konductor.dev/v1',
  'BenchObject',
  'benchobjects',
);

export class BenchObjects {
  @on.create(BenchObject)
  created({ spec, patch }: ChangeContext<BenchObject>): void {
    patch.status.seen = spec.idx;
  }
}
