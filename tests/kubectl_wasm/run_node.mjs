// Runs kubectl.wasm under Node through the browser glue (kubectl.mjs): each line on stdin is a JSON job
// {args, env, cwd, stdin, events, timeoutMs, streams}; each answer is a JSON line {code, stdout, stderr, ms}.
// kubectl's requests to the kubeconfig's server are relayed to RELAY (the test's in-process API server).
// Usage: node run_node.mjs KUBECTL_WASM_DIR SERVER RELAY
import { createInterface } from "node:readline";
import * as nodeFs from "node:fs";
import { pathToFileURL } from "node:url";

const [dir, server, relay] = process.argv.slice(2);
const realFetch = globalThis.fetch.bind(globalThis);
const { loadKubectl } = await import(pathToFileURL(`${dir}/kubectl.mjs`).href);
const started = performance.now();
const kubectl = await loadKubectl(dir);
process.stderr.write(`loaded in ${Math.round(performance.now() - started)} ms\n`);

async function serve(method, target, headers, body, sink) {
  const abort = new AbortController();
  const watch = setInterval(() => { if (sink.closed()) abort.abort(); }, 20);
  try {
    const response = await realFetch(relay + target, {
      method, headers, body: body.length ? body : undefined, signal: abort.signal,
    });
    sink.head(response.status, [...response.headers]);
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      sink.data(value);
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  } finally {
    clearInterval(watch);
  }
}

const decoder = new TextDecoder();
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const job = JSON.parse(line);
  const t = performance.now();
  let rows = 0, header = false;
  const onStdout = job.events ? (bytes) => {
    for (const text of decoder.decode(bytes).split("\n").slice(0, -1)) {
      if (!header && /^[A-Z][A-Z0-9 -]*$/.test(text.trim())) header = true; else rows += 1;
    }
    return rows >= job.events;
  } : null;
  const result = await kubectl.run({
    args: job.args, env: job.env, cwd: job.cwd || process.cwd(),
    stdin: new TextEncoder().encode(job.stdin || ""), fs: nodeFs, server, serve, onStdout,
    timeoutMs: job.timeoutMs || 0, streams: Boolean(job.streams),
  });
  process.stdout.write(JSON.stringify({
    code: result.code, stdout: decoder.decode(result.stdout), stderr: decoder.decode(result.stderr),
    ms: Math.round(performance.now() - t),
  }) + "\n");
}
