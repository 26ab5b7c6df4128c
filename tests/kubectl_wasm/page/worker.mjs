// Pyodide in a module worker with labsupport unpacked from python.zip, kubectl.wasm served from kubectl/.
import { loadPyodide } from "./pyodide/pyodide.mjs";

const started = performance.now();
const pyodide = await loadPyodide({
  indexURL: new URL("pyodide/", location.href).href,
  env: { HOME: "/home/pyodide", LABSUPPORT_KUBECTL_WASM: new URL("kubectl", location.href).href },
});
const bundle = await (await fetch("python.zip")).arrayBuffer();
pyodide.unpackArchive(bundle, "zip", { extractDir: "/home/pyodide/lib" });
pyodide.runPython("import sys; sys.path.insert(0, '/home/pyodide/lib')");
self.onmessage = async (event) => {
  const t = performance.now();
  try {
    const out = await pyodide.runPythonAsync(event.data);
    postMessage({ ok: true, out: String(out), ms: performance.now() - t });
  } catch (error) {
    postMessage({ ok: false, error: error.message, ms: performance.now() - t });
  }
};
postMessage({ ready: true, ms: performance.now() - started, jspi: "Suspending" in WebAssembly });
