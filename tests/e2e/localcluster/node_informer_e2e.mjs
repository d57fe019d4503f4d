// @kubernetes/client-node (installed in tests/e2e/node by scripts/install-deps) against
// build/bin/localcluster: an informer on configmaps sees an add and a delete.
// Usage: node node_informer_e2e.mjs LOCALCLUSTER_BINARY --tls  (client-node 1.x refuses plain http)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import readline from 'node:readline';

const here = path.dirname(fileURLToPath(import.meta.url));
const clientPath = path.join(here, '..', 'node', 'node_modules', '@kubernetes', 'client-node', 'dist', 'index.js');

function fail(msg) {
  console.error(`FAIL: ${msg}`);
  process.exit(1);
}

const withTimeout = (p, ms, what) =>
  Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms))]);

async function main() {
  const binary = process.argv[2];
  if (!binary) fail('usage: node node_informer_e2e.mjs LOCALCLUSTER_BINARY [--tls]');
  if (!existsSync(clientPath)) {
    // Without the client the test cannot run: ctest's SKIP_RETURN_CODE reports it as skipped.
    console.log('SKIPPED: @kubernetes/client-node is not installed (scripts/install-deps, or: cd tests/e2e/node && npm install)');
    process.exit(77);
  }
  const k8s = await import(pathToFileURL(clientPath).href);

  const work = mkdtempSync(path.join(tmpdir(), 'lc-node-'));
  const kubeconfig = path.join(work, 'kubeconfig');
  const proc = spawn(binary, ['--listen', '127.0.0.1:0', '--kubeconfig-out', kubeconfig, ...process.argv.slice(3)],
                     { stdio: ['ignore', 'pipe', 'inherit'] });
  const stop = async () => {
    if (proc.exitCode !== null) return;
    proc.kill('SIGTERM');
    await withTimeout(new Promise((r) => proc.once('exit', r)), 5000, 'localcluster stop after SIGTERM');
  };
  const hardTimer = setTimeout(() => { proc.kill('SIGKILL'); fail('test exceeded 60 s'); }, 60000);
  try {
    const ready = await withTimeout(new Promise((resolve, reject) => {
      const rl = readline.createInterface({ input: proc.stdout });
      rl.once('line', resolve);
      proc.once('exit', (code) => reject(new Error(`localcluster exited with ${code} before ready`)));
    }), 10000, "the 'ready <url>' line");
    if (!ready.startsWith('ready ')) fail(`unexpected first line: ${ready}`);

    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kubeconfig);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const informer = k8s.makeInformer(kc, '/api/v1/namespaces/default/configmaps',
                                      () => core.listNamespacedConfigMap({ namespace: 'default' }));
    const waiters = { add: [], delete: [] };
    const seen = { add: new Set(), delete: new Set() };
    for (const verb of ['add', 'delete']) {
      informer.on(verb, (obj) => {
        seen[verb].add(obj.metadata.name);
        for (const w of waiters[verb]) w();
      });
    }
    let informerError = null;
    informer.on('error', (err) => { informerError = err; });
    const waitFor = (verb, name) => withTimeout(new Promise((resolve) => {
      const check = () => { if (seen[verb].has(name)) resolve(); };
      waiters[verb].push(check);
      check();
    }), 10000, `informer ${verb} event for ${name}`);

    await withTimeout(informer.start(), 10000, 'informer start');
    await core.createNamespacedConfigMap({ namespace: 'default',
                                           body: { metadata: { name: 'node1', labels: { app: 'node' } }, data: { k: '1' } } });
    await waitFor('add', 'node1');
    if (!informer.get('node1', 'default')) fail('informer cache lacks node1 after its add event');
    await core.deleteNamespacedConfigMap({ name: 'node1', namespace: 'default' });
    await waitFor('delete', 'node1');
    if (informer.get('node1', 'default')) fail('informer cache still has node1 after its delete event');
    if (informerError) fail(`informer reported an error: ${informerError}`);
    await informer.stop();
    console.log('PASS');
  } finally {
    clearTimeout(hardTimer);
    await stop().catch((e) => fail(e.message));
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e) => fail(e.stack || String(e)));
