// Runs Python code in Pyodide under Node with the project and its pure dependencies mounted, JSPI on (start Node
// with --experimental-wasm-stack-switching), kubectl.wasm where labsupport looks for it; prints what the code's
// last expression gives (a string).
// Usage: node --experimental-wasm-stack-switching pyodide_node.mjs PYODIDE_DIR PROJECT SITE_PACKAGES KUBECTL_DIR CODE
const [pyodideDir, project, sitePackages, kubectlDir, code] = process.argv.slice(2);
const { loadPyodide } = await import(`${pyodideDir}/pyodide.mjs`);
const started = performance.now();
const pyodide = await loadPyodide({
  indexURL: `${pyodideDir}/`,
  env: { HOME: "/home/pyodide", LABSUPPORT_KUBECTL_WASM: kubectlDir, PYTHONDONTWRITEBYTECODE: "1",
         LABSUPPORT_LANG: process.env.LABSUPPORT_LANG || "en" },
});
for (const [host, here] of [[project, "/mnt/project"], [sitePackages, "/mnt/site-packages"]]) {
  pyodide.FS.mkdirTree(here);
  pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: host }, here);
}
process.stderr.write(`pyodide loaded in ${Math.round(performance.now() - started)} ms\n`);
pyodide.runPython('import sys; sys.path[:0] = ["/mnt/project"]; sys.path.append("/mnt/site-packages")');
try {
  process.stdout.write(String(await pyodide.runPythonAsync(code)));
} catch (error) {
  process.stderr.write(`${error.message}\n`);  // a Python traceback, not Pyodide's minified source
  process.exitCode = 1;
}
