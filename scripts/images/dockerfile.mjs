// Builds an image the way its Dockerfile says, without a container engine: each stage is a folder on this
// machine standing for the stage's WORKDIR, COPY copies into it (from the context or an earlier stage),
// RUN runs there with this machine's Node and npm (the same major version as the image's Node), and the
// final stage's folder becomes the application layer on top of a base image built from Debian packages.
// Only what Konductor's Dockerfiles use is understood; anything else stops the build with its line.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';

/** Parses a Dockerfile into stages of instructions (continuation lines joined, comments dropped). */
export function parseDockerfile(text, file = 'Dockerfile') {
  const stages = [];
  const lines = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const match = /^(\w+)\s+(.*)$/.exec(line);
    if (!match) throw new Error(`${file}:${index + 1}: cannot read "${line}"`);
    const op = match[1].toUpperCase();
    const args = match[2].trim();
    if (op === 'FROM') {
      const [image, as, name] = args.split(/\s+/);
      if (as !== undefined && (as.toUpperCase() !== 'AS' || !name))
        throw new Error(`${file}:${index + 1}: FROM takes "image [AS name]"`);
      stages.push({ from: image, name, steps: [] });
      return;
    }
    if (stages.length === 0) throw new Error(`${file}:${index + 1}: ${op} before FROM`);
    stages.at(-1).steps.push({ op, args, where: `${file}:${index + 1}` });
  });
  if (stages.length === 0) throw new Error(`${file}: no FROM`);
  return stages;
}

/** The JSON (exec) form of ENTRYPOINT/CMD, or the shell form wrapped as Docker does. */
function execForm(args) {
  if (args.startsWith('[')) return JSON.parse(args);
  return ['/bin/sh', '-c', args];
}

/** ENV "K=V K2=V2" or the legacy "K V". */
function envPairs(args) {
  if (!args.includes('=')) {
    const [key, ...rest] = args.split(/\s+/);
    return [[key, rest.join(' ')]];
  }
  const pairs = [];
  const re = /(\w+)=("(?:[^"\\]|\\.)*"|\S*)/g;
  for (let m = re.exec(args); m; m = re.exec(args))
    pairs.push([m[1], m[2].startsWith('"') ? JSON.parse(m[2]) : m[2]]);
  return pairs;
}

/** .dockerignore patterns, anchored at the context root as Docker reads them. */
export function readIgnore(context) {
  const file = join(context, '.dockerignore');
  if (!existsSync(file)) return () => false;
  const patterns = readFileSync(file, 'utf8')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map(
      (p) =>
        new RegExp(
          `^${p
            .replace(/^\/+|\/+$/g, '')
            .split('**')
            .map((part) =>
              part
                .replace(/[.+^${}()|[\]\\]/g, '\\$&')
                .replace(/\*/g, '[^/]*')
                .replace(/\?/g, '[^/]'),
            )
            .join('.*')}$`,
        ),
    );
  return (rel) => {
    const parts = rel.split('/');
    for (let i = 1; i <= parts.length; i += 1) {
      const prefix = parts.slice(0, i).join('/');
      if (patterns.some((re) => re.test(prefix))) return true;
    }
    return false;
  };
}

/** Every file under `dir` that the build reads (for the cache key), context-relative, sorted. */
export function contextFiles(context, sources, ignored) {
  const out = [];
  const walk = (rel) => {
    if (ignored(rel)) return;
    const abs = join(context, rel);
    const st = statSync(abs, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isDirectory())
      for (const entry of readdirSync(abs).sort()) walk(rel ? `${rel}/${entry}` : entry);
    else out.push(rel);
  };
  for (const source of sources) walk(posix.normalize(source).replace(/^\.\/?|\/$/g, ''));
  return [...new Set(out)].sort();
}

/** The context paths COPY instructions read (not those copied from other stages). */
export function copiedSources(stages) {
  const sources = [];
  for (const stage of stages)
    for (const step of stage.steps) {
      if (step.op !== 'COPY') continue;
      const words = step.args.split(/\s+/);
      if (words[0].startsWith('--from=')) continue;
      sources.push(...words.filter((w) => !w.startsWith('--')).slice(0, -1));
    }
  return sources;
}

/**
 * Runs the stages in folders under `work`; returns the final stage's folder, its WORKDIR and its runtime
 * config (Env, WorkingDir, User, ExposedPorts, Entrypoint, Cmd) as the image config records them.
 */
export function buildStages({ stages, context, work, baseEnv, log }) {
  const ignored = readIgnore(context);
  const built = new Map();
  let result;
  stages.forEach((stage, index) => {
    // Each stage's folder is `${work}-<index>`: the caller picks where (see images.mjs for why).
    const dir = `${work}-${index}`;
    mkdirSync(dir, { recursive: true });
    const config = {
      Env: [...baseEnv],
      WorkingDir: '',
      User: '',
      ExposedPorts: {},
      Entrypoint: null,
      Cmd: null,
    };
    const env = {};
    let workdir = '';
    const inStage = (path) => {
      const abs = posix.isAbsolute(path) ? path : posix.join(workdir || '/', path);
      if (!workdir || !(abs === workdir || abs.startsWith(`${workdir}/`))) {
        throw new Error(
          `${path}: only paths under the stage's WORKDIR (${workdir || 'none set'}) can be built without a container engine`,
        );
      }
      return join(dir, relative(workdir, abs));
    };
    for (const step of stage.steps) {
      const fail = (why) => {
        throw new Error(`${step.where}: ${step.op} ${step.args}: ${why}`);
      };
      switch (step.op) {
        case 'ENV':
          for (const [key, value] of envPairs(step.args)) {
            env[key] = value;
            config.Env = config.Env.filter((e) => !e.startsWith(`${key}=`)).concat(
              `${key}=${value}`,
            );
          }
          break;
        case 'WORKDIR':
          if (workdir && workdir !== step.args) fail('one WORKDIR per stage');
          workdir = step.args;
          config.WorkingDir = workdir;
          break;
        case 'COPY': {
          const words = step.args.split(/\s+/);
          const from = words[0].startsWith('--from=')
            ? words.shift().slice('--from='.length)
            : undefined;
          if (words.some((w) => w.startsWith('--'))) fail('only --from is supported');
          const dest = words.pop();
          let fromDir = context;
          let fromRoot = '';
          if (from !== undefined) {
            const source = built.get(from) ?? built.get(String(Number(from)));
            if (!source) fail(`no earlier stage named ${from}`);
            fromDir = source.dir;
            fromRoot = source.workdir;
          }
          for (const src of words) {
            const srcPath =
              from === undefined ? join(context, src) : join(fromDir, relative(fromRoot, src));
            if (!existsSync(srcPath)) fail(`${src} does not exist`);
            const target = inStage(dest);
            const intoDir =
              dest.endsWith('/') || words.length > 1 || statSync(srcPath).isDirectory();
            const final =
              intoDir && !statSync(srcPath).isDirectory()
                ? join(target, posix.basename(src))
                : target;
            mkdirSync(dirname(final), { recursive: true });
            const filter =
              from === undefined
                ? (p) => !ignored(relative(context, p).split('\\').join('/'))
                : () => true;
            cpSync(srcPath, final, { recursive: true, filter, verbatimSymlinks: true });
          }
          break;
        }
        case 'RUN':
          log(`RUN ${step.args}`);
          execFileSync('/bin/sh', ['-ec', step.args], {
            cwd: dir,
            stdio: ['ignore', process.stderr, 'inherit'],
            env: { ...process.env, ...env },
          });
          break;
        case 'USER':
          config.User = step.args;
          break;
        case 'EXPOSE':
          for (const port of step.args.split(/\s+/))
            config.ExposedPorts[port.includes('/') ? port : `${port}/tcp`] = {};
          break;
        case 'ENTRYPOINT':
          config.Entrypoint = execForm(step.args);
          break;
        case 'CMD':
          config.Cmd = execForm(step.args);
          break;
        default:
          fail('not supported without a container engine');
      }
    }
    built.set(stage.name ?? String(index), { dir, workdir });
    built.set(String(index), { dir, workdir });
    result = { dir, workdir, config, from: stage.from };
  });
  return result;
}
