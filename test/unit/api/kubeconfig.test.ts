import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeconfigError, loadKubeconfig } from 'konductor';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const b64 = (text: string): string => Buffer.from(text).toString('base64');

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function applied(kc: {
  applyToHTTPSOptions(o: RequestOptions): Promise<void>;
}): Promise<RequestOptions & { headers: Record<string, string> }> {
  const options: RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(options);
  return options as RequestOptions & { headers: Record<string, string> };
}

const twoContexts = `
apiVersion: v1
kind: Config
current-context: main
clusters:
- name: c1
  cluster: { server: 'https://one.example:6443', certificate-authority-data: '${b64('CA-ONE')}' }
- name: c2
  cluster: { server: 'https://two.example', insecure-skip-tls-verify: true, tls-server-name: api.two }
users:
- name: token-user
  user: { token: abc }
- name: cert-user
  user: { client-certificate: certs/client.crt, client-key-data: '${b64('KEY')}' }
- name: basic-user
  user: { username: ann, password: secret }
contexts:
- name: main
  context: { cluster: c1, user: token-user, namespace: team-a }
- name: other
  context: { cluster: c2, user: cert-user }
- name: basic
  context: { cluster: c2, user: basic-user }
`;

describe('loadKubeconfig', () => {
  it('uses the current context: its server, CA and bearer token', async () => {
    const kc = loadKubeconfig({ path: write('config', twoContexts) });
    expect(kc.getCurrentCluster().server).toBe('https://one.example:6443');
    expect(kc.contextName).toBe('main');
    expect(kc.namespace).toBe('team-a');
    const options = await applied(kc);
    expect(options.ca?.toString()).toBe('CA-ONE');
    expect(options.headers.Authorization).toBe('Bearer abc');
  });

  it('uses another context when asked, with client certificates read relative to the kubeconfig', async () => {
    mkdirSync(join(dir, 'certs'));
    write('certs/client.crt', 'CERT');
    const kc = loadKubeconfig({ path: write('config', twoContexts), context: 'other' });
    const options = await applied(kc);
    expect(kc.getCurrentCluster().server).toBe('https://two.example');
    expect(options.cert?.toString()).toBe('CERT');
    expect(options.key?.toString()).toBe('KEY');
    expect(options.rejectUnauthorized).toBe(false);
    expect(options.servername).toBe('api.two');
    expect(options.headers.Authorization).toBeUndefined();
  });

  it('sends basic credentials for a username and password', async () => {
    const kc = loadKubeconfig({ path: write('config', twoContexts), context: 'basic' });
    expect((await applied(kc)).headers.Authorization).toBe(`Basic ${b64('ann:secret')}`);
  });

  it('names the available contexts when the asked one is missing', () => {
    expect(() => loadKubeconfig({ path: write('config', twoContexts), context: 'nope' })).toThrow(
      new KubeconfigError("context 'nope' not found; available: main, other, basic"),
    );
  });

  it('says which file is missing', () => {
    expect(() => loadKubeconfig({ path: join(dir, 'absent') })).toThrow(/absent does not exist/);
  });

  it('merges the files in KUBECONFIG: the first to name an entry or a current context wins', () => {
    const first = write(
      'a',
      `
current-context: from-a
contexts: [{ name: from-a, context: { cluster: shared, user: u } }]
clusters: [{ name: shared, cluster: { server: 'https://a.example' } }]
`,
    );
    const second = write(
      'b',
      `
current-context: from-b
contexts: [{ name: from-b, context: { cluster: shared, user: u } }]
clusters: [{ name: shared, cluster: { server: 'https://b.example' } }]
users: [{ name: u, user: { token: from-b } }]
`,
    );
    const kc = loadKubeconfig({
      env: { KUBECONFIG: `${first}:${join(dir, 'missing')}:${second}` },
    });
    expect(kc.contextName).toBe('from-a');
    expect(kc.getCurrentCluster().server).toBe('https://a.example');
  });

  it('falls back to ~/.kube/config', () => {
    mkdirSync(join(dir, '.kube'));
    write('.kube/config', twoContexts);
    expect(loadKubeconfig({ env: { HOME: dir } }).contextName).toBe('main');
  });

  it("inside a cluster, uses the ServiceAccount's server, CA, namespace and token", async () => {
    const sa = join(dir, 'sa');
    mkdirSync(sa);
    writeFileSync(join(sa, 'token'), 'first\n');
    writeFileSync(join(sa, 'ca.crt'), 'CLUSTER-CA');
    writeFileSync(join(sa, 'namespace'), 'operators');
    const kc = loadKubeconfig({
      env: { HOME: dir, KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      serviceAccountDir: sa,
    });
    expect(kc.getCurrentCluster().server).toBe('https://[fd00::1]:443');
    expect(kc.namespace).toBe('operators');
    const options = await applied(kc);
    expect(options.headers.Authorization).toBe('Bearer first');
    expect(options.ca?.toString()).toBe('CLUSTER-CA');
  });

  it('leaves exec credential plugins to client-node, loaded only then', async () => {
    const plugin = write(
      'plugin.mjs',
      `console.log(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential', status: { token: 'from-exec' } }));`,
    );
    const kc = loadKubeconfig({
      path: write(
        'config',
        `
current-context: x
contexts: [{ name: x, context: { cluster: c, user: e } }]
clusters: [{ name: c, cluster: { server: 'https://c.example' } }]
users: [{ name: e, user: { exec: { apiVersion: client.authentication.k8s.io/v1beta1, command: '${process.execPath}', args: ['${plugin}'] } } }]
`,
      ),
    });
    expect((await applied(kc)).headers.Authorization).toBe('Bearer from-exec');
  });

  it('without any kubeconfig or cluster, says what to do', () => {
    expect(() =>
      loadKubeconfig({ env: { HOME: dir }, serviceAccountDir: join(dir, 'none') }),
    ).toThrow(/set KUBECONFIG or --kubeconfig/);
  });
});
