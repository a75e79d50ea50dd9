import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../support/node.js';

type ImageConfig = {
  Env?: string[];
  Entrypoint?: string[];
  Cmd?: string[];
  WorkingDir?: string;
  User?: string;
  ExposedPorts?: Record<string, unknown>;
};

/** The runtime settings the Dockerfile's last stage gives, read independently of scripts/images. */
function dockerfileRuntime(
  text: string,
): Required<Omit<ImageConfig, 'ExposedPorts'>> & { ports: string[] } {
  const last = text.split(/^FROM .*$/m).at(-1)!;
  const lines = last.split('\n').map((line) => line.trim());
  const value = (op: string) =>
    lines
      .filter((line) => line.startsWith(`${op} `))
      .map((line) => line.slice(op.length + 1).trim());
  return {
    Env: value('ENV').flatMap((args) => args.split(/\s+/)),
    Entrypoint: JSON.parse(value('ENTRYPOINT').at(-1)!) as string[],
    Cmd: JSON.parse(value('CMD').at(-1)!) as string[],
    WorkingDir: value('WORKDIR').at(-1)!,
    User: value('USER').at(-1)!,
    ports: value('EXPOSE')
      .flatMap((args) => args.split(/\s+/))
      .map((port) => (port.includes('/') ? port : `${port}/tcp`)),
  };
}

describe('the operator image scripts/images builds for the local node', () => {
  it("has the Dockerfile's entrypoint, command, user, working directory, environment and ports", () => {
    const listed = JSON.parse(
      execFileSync('node', [join(REPO, 'scripts/images/images.mjs'), '--only', 'konductor'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    ) as { reference: string; archive: string }[];
    expect(listed.map((image) => image.reference)).toEqual(['docker.io/library/konductor:0.1.0']);
    const archive = listed[0]!.archive;
    const manifest = JSON.parse(
      execFileSync('tar', ['-xOf', archive, 'manifest.json'], { encoding: 'utf8' }),
    ) as { Config: string }[];
    const config = (
      JSON.parse(
        execFileSync('tar', ['-xOf', archive, manifest[0]!.Config], { encoding: 'utf8' }),
      ) as { config: ImageConfig }
    ).config;
    const wanted = dockerfileRuntime(readFileSync(join(REPO, 'Dockerfile'), 'utf8'));
    expect(config.Entrypoint).toEqual(wanted.Entrypoint);
    expect(config.Cmd).toEqual(wanted.Cmd);
    expect(config.User).toBe(wanted.User);
    expect(config.WorkingDir).toBe(wanted.WorkingDir);
    expect(config.Env).toEqual(expect.arrayContaining(wanted.Env));
    expect(Object.keys(config.ExposedPorts ?? {}).sort()).toEqual(wanted.ports.sort());
  }, 300_000);
});
