// Root filesystems from Debian packages, unpacked (never installed) with dpkg-deb: the packages are fetched
// with `apt-get download` into the image cache, so nothing on this machine changes and no root is needed.
// No maintainer scripts run, which is fine for what these images hold (libc, busybox, etcd, Node).
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  statSync,
  symlinkSync,
  lstatSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

const asRoot = () => (process.getuid?.() === 0 ? ['-o', 'APT::Sandbox::User=root'] : []);

/**
 * apt options reading Debian sid from a private folder (`dir`), for the few pieces bookworm has only in
 * an older version (etcd 3.5, a Prometheus with Kubernetes discovery): the machine's own apt sources,
 * lists and installed packages are never touched. The lists are fetched when missing or a day old.
 */
export function sidApt(dir) {
  const lists = join(dir, 'lists');
  const options = [
    '-o',
    `Dir::Etc::SourceList=${join(dir, 'sources.list')}`,
    '-o',
    `Dir::Etc::SourceParts=${join(dir, 'sources.list.d')}`,
    '-o',
    `Dir::State::Lists=${lists}`,
    '-o',
    `Dir::Cache=${join(dir, 'cache')}`,
    '-o',
    `Dir::State::status=${join(dir, 'status')}`,
  ];
  const stamp = join(dir, 'updated');
  if (existsSync(stamp) && Date.now() - statSync(stamp).mtimeMs < 86_400_000) return options;
  for (const sub of ['lists/partial', 'cache/archives/partial', 'sources.list.d'])
    mkdirSync(join(dir, sub), { recursive: true });
  writeFileSync(
    join(dir, 'sources.list'),
    'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main\n',
  );
  writeFileSync(join(dir, 'status'), '');
  execFileSync('apt-get', [...asRoot(), ...options, 'update', '-qq'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  writeFileSync(stamp, new Date().toISOString());
  return options;
}

/** The version apt would fetch for `pkg` (its candidate), or an error naming what to do; `apt`: options such as {@link sidApt}'s. */
export function candidateVersion(pkg, apt = []) {
  const out = execFileSync('apt-cache', [...apt, 'policy', pkg], { encoding: 'utf8' });
  const version = /Candidate:\s*(\S+)/.exec(out)?.[1];
  if (!version || version === '(none)') {
    throw new Error(
      `apt knows no package ${pkg}: run \`apt-get update\` as root (scripts/provision.sh does), then rerun`,
    );
  }
  return version;
}

/** Fetches `pkg=version` into `debDir` unless already there; returns the .deb path. */
export function downloadDeb(pkg, version, debDir, apt = []) {
  mkdirSync(debDir, { recursive: true });
  const epochless = version.replace(/^\d+:/, '');
  const have = readdirSync(debDir).find(
    (f) => f.startsWith(`${pkg}_${epochless.replace(/:/g, '%3a')}_`) && f.endsWith('.deb'),
  );
  if (have) return join(debDir, have);
  execFileSync('apt-get', [...asRoot(), ...apt, 'download', '-qq', `${pkg}=${version}`], {
    cwd: debDir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const got = readdirSync(debDir).find(
    (f) =>
      f.startsWith(`${pkg}_`) && f.endsWith('.deb') && f.includes(epochless.replace(/:/g, '%3a')),
  );
  if (!got) throw new Error(`apt-get download ${pkg}=${version} left no .deb in ${debDir}`);
  return join(debDir, got);
}

/** Unpacks each .deb into `root`. */
export function unpackDebs(debs, root) {
  mkdirSync(root, { recursive: true });
  for (const deb of debs) execFileSync('dpkg-deb', ['-x', deb, root]);
}

/** Links every busybox applet into /bin and /usr/bin of `root` (busybox at /bin/busybox), sparing real files. */
export function linkBusybox(root) {
  const applets = execFileSync(join(root, 'bin/busybox'), ['--list-full'], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
  for (const applet of applets) {
    const path = join(root, applet);
    if (lstatExists(path)) continue;
    mkdirSync(join(path, '..'), { recursive: true });
    symlinkSync('/bin/busybox', path);
  }
}

function lstatExists(path) {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Folders a minimal root filesystem needs at run time (a writable /tmp is a volume in our Pods). */
export function baseFolders(root) {
  for (const dir of ['tmp', 'etc', 'proc', 'sys', 'dev', 'var/run'])
    mkdirSync(join(root, dir), { recursive: true });
  return existsSync(root);
}
