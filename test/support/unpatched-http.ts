/*
 * Runs before every test file (jest `setupFiles`): node's http and https must be node's own. nock
 * patches these core modules, which all files in a jest worker share; a nock-using file that did not
 * restore them would send every later file's requests, integration files' included, through nock's
 * interceptor, whose own TLS sockets crash a worker when a connection is torn down mid-handshake.
 */
// Read through getBuiltinModule, not `import`: under jest's ESM support an import here would fix this
// file's view of node:http before a nock-using test file patches it, and its requests would bypass nock.
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');

// node's own functions print their JavaScript source; nock's replacements are proxies that print native code.
const patched = Object.entries({
  'http.request': http.request,
  'http.get': http.get,
  'http.ClientRequest': http.ClientRequest,
  'https.request': https.request,
  'https.get': https.get,
})
  .filter(([, fn]) => Function.prototype.toString.call(fn).includes('[native code]'))
  .map(([name]) => name);
if (patched.length > 0) {
  throw new Error(
    `${patched.join(', ')} are still patched by nock from an earlier test file in this jest worker: ` +
      'a nock-using test file must restore them in afterAll (importing test/unit/watching/fake-api.ts does that for it)',
  );
}
export {};
