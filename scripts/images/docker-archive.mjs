// Writes a docker-archive (the `docker save` layout containerd's `ctr images import` reads) from layer
// folders, without a registry, a daemon or an OCI tool: each layer is an uncompressed tar made by the
// system tar with fixed owners and times, so the same inputs give the same image digest.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import {
  createReadStream,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

/** sha256 of a file, hex. */
export async function sha256File(path) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk);
  return hash.digest('hex');
}

/** Tars `dir` as one layer: root-owned, times at the epoch, names sorted. */
export function tarLayer(dir, out) {
  execFileSync('tar', [
    '--numeric-owner',
    '--owner=0',
    '--group=0',
    '--sort=name',
    '--mtime=@0',
    '-C',
    dir,
    '-cf',
    out,
    '.',
  ]);
}

/**
 * Writes `out` (atomically) holding one image named `reference` made of `layerDirs` in order.
 * `config` is the image's runtime config (Env, Entrypoint, Cmd, WorkingDir, User, ExposedPorts).
 */
export async function writeDockerArchive({ out, reference, layerDirs, config }) {
  const work = mkdtempSync(`${out}.work-`);
  try {
    const layers = [];
    const diffIds = [];
    for (const [index, dir] of layerDirs.entries()) {
      const tar = join(work, `layer-${index}.tar`);
      tarLayer(dir, tar);
      const digest = await sha256File(tar);
      mkdirSync(join(work, digest));
      renameSync(tar, join(work, digest, 'layer.tar'));
      layers.push(`${digest}/layer.tar`);
      diffIds.push(`sha256:${digest}`);
    }
    const imageConfig = JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      created: '1970-01-01T00:00:00Z',
      config,
      rootfs: { type: 'layers', diff_ids: diffIds },
      history: layerDirs.map(() => ({
        created: '1970-01-01T00:00:00Z',
        created_by: 'konductor scripts/images',
      })),
    });
    const configId = createHash('sha256').update(imageConfig).digest('hex');
    writeFileSync(join(work, `${configId}.json`), imageConfig);
    writeFileSync(
      join(work, 'manifest.json'),
      JSON.stringify([{ Config: `${configId}.json`, RepoTags: [reference], Layers: layers }]),
    );
    writeFileSync(
      join(work, 'repositories'),
      JSON.stringify(repositories(reference, layers.at(-1))),
    );
    const tmp = `${out}.tmp`;
    // Entries named without a leading "./": importers look for "manifest.json" exactly.
    const entries = [
      'manifest.json',
      'repositories',
      `${configId}.json`,
      ...layers.map((l) => l.split('/')[0]),
    ];
    execFileSync('tar', [
      '--numeric-owner',
      '--owner=0',
      '--group=0',
      '--sort=name',
      '--mtime=@0',
      '-C',
      work,
      '-cf',
      tmp,
      ...entries,
    ]);
    renameSync(tmp, out);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function repositories(reference, topLayer) {
  const at = reference.lastIndexOf(':');
  return { [reference.slice(0, at)]: { [reference.slice(at + 1)]: topLayer.split('/')[0] } };
}
