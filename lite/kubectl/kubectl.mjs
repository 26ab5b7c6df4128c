// Runs the real kubectl, built for js/wasm (kubectl.wasm beside this file), in this JavaScript context: a Pyodide
// kernel's web worker, or Node for the tests. Each run is a fresh Go program, as a process would be. The host gives
// it a file system (Node's fs API: Node's own, or emscriptenFs() over Pyodide's) and `serve`, which answers the
// HTTP requests kubectl sends to `server` (Go's js/wasm net/http sends them through fetch, which is routed here);
// a request for any other URL on a `.invalid` host fails, so nothing kubectl asks for ever leaves the context.

const FLAGS = { O_RDONLY: 0, O_WRONLY: 1, O_RDWR: 2, O_CREAT: 0o100, O_EXCL: 0o200, O_TRUNC: 0o1000,
                O_APPEND: 0o2000, O_DIRECTORY: 0o200000 };
const S_IFCHR = 0o20000;
const encoder = new TextEncoder();

function errnoError(code, message) {
  const error = new Error(`${code}: ${message}`);
  error.code = code;
  return error;
}

/** Load Go's wasm_exec.js and compile kubectl.wasm from `base` (a URL, or a folder path under Node). */
export async function loadKubectl(base) {
  base = String(base).replace(/\/+$/, "");
  const remote = /^(https?|blob):/.test(base);
  const hadProcess = "process" in globalThis;
  if (!globalThis.Go) {
    const url = remote ? `${base}/wasm_exec.js` : (await import("node:url")).pathToFileURL(`${base}/wasm_exec.js`).href;
    await import(url);
    if (!hadProcess) delete globalThis.process;  // wasm_exec.js leaves a stub; each run gives Go its own
  }
  let module;
  if (remote) {
    const response = await fetch(`${base}/kubectl.wasm`);
    if (!response.ok) throw new Error(`kubectl.wasm: ${response.status} ${response.statusText} from ${base}`);
    module = await WebAssembly.compileStreaming(response);
  } else {
    const { readFile } = await import("node:fs/promises");
    module = await WebAssembly.compile(await readFile(`${base}/kubectl.wasm`));
  }
  return new Kubectl(module);
}

const routes = new Map();  // origin → serve, while a run that names it is going
let realFetch = null;

function routedFetch(input, init) {
  const url = new URL(typeof input === "object" && "url" in input ? input.url : String(input));
  const serve = routes.get(url.origin);
  if (serve) return serve(url, init || {});
  if (url.hostname.endsWith(".invalid")) {
    return Promise.reject(new TypeError(`no kubectl run serves ${url.origin} any more`));
  }
  return realFetch(input, init);
}

function installFetch() {
  if (globalThis.fetch !== routedFetch) {
    realFetch = globalThis.fetch.bind(globalThis);
    globalThis.fetch = routedFetch;
  }
}

/**
 * A fetch for one origin, answered by `serve(method, target, headers, body, sink)`: the sink's head(status,
 * headers) resolves the fetch, data(bytes) feeds the body as it comes, closed() says whether kubectl stopped
 * reading; whatever serve returns (or a returned promise) ends the body.
 */
function fetchFor(serve, alive) {
  return (url, init) => new Promise((resolve, reject) => {
    const headers = [];
    new Headers(init.headers || {}).forEach((value, name) => headers.push([name, value]));
    const body = init.body ? new Uint8Array(init.body) : new Uint8Array(0);
    let controller = null;
    let gone = false;
    let answered = false;
    const signal = init.signal;
    const stop = () => {
      gone = true;
      const error = new DOMException("the request was aborted", "AbortError");
      if (!answered) reject(error);
      else try { controller.error(error); } catch { /* already closed */ }
    };
    if (signal) {
      if (signal.aborted) return stop();
      signal.addEventListener("abort", stop, { once: true });
    }
    const queued = [];
    const stream = new ReadableStream({
      start(c) { controller = c; for (const piece of queued) c.enqueue(piece); queued.length = 0; },
    });
    const sink = {
      head(status, list) {
        if (answered) return;
        answered = true;
        const h = new Headers();
        for (const [name, value] of list) {
          if (!/^(connection|transfer-encoding|keep-alive)$/i.test(name)) h.append(name, value);
        }
        const empty = status === 204 || status === 304 || init.method === "HEAD";
        try {
          resolve(new Response(empty ? null : stream, { status, headers: h }));
        } catch (error) {  // a status fetch cannot carry (an upgrade): kubectl sees the request fail
          gone = true;
          reject(error);
        }
      },
      data(bytes) {
        if (gone) return;
        const piece = new Uint8Array(bytes);
        if (controller) controller.enqueue(piece); else queued.push(piece);
      },
      closed() { return gone || !alive(); },
    };
    const finish = () => {
      if (signal) signal.removeEventListener("abort", stop);
      if (!answered) reject(new TypeError(`${url.origin} wrote no answer to ${init.method || "GET"} ${url.pathname}`));
      else if (!gone) try { controller.close(); } catch { /* already errored */ }
    };
    let result;
    try {
      result = serve(init.method || "GET", url.pathname + url.search, headers, body, sink);
    } catch (error) {
      if (!answered) return reject(error);
      try { controller.error(error); } catch { /* already closed */ }
      return;
    }
    Promise.resolve(result).then(finish, (error) => {
      if (!answered) reject(error);
      else try { controller.error(error); } catch { /* already closed */ }
    });
  });
}

/** Node's fs API, as Go's syscall package calls it, over a host fs, with 0, 1 and 2 kept for this run. */
function goFs(host, stdin, write) {
  let stdinAt = 0;
  const stdio = (fd) => fd >= 0 && fd <= 2;
  const charDevice = { dev: 0, ino: 0, mode: S_IFCHR | 0o620, nlink: 1, uid: 0, gid: 0, rdev: 0, size: 0,
                       blksize: 4096, blocks: 0, atimeMs: 0, mtimeMs: 0, ctimeMs: 0, isDirectory: () => false };
  const fs = {
    constants: FLAGS,
    writeSync(fd, buf) {
      if (fd === 1 || fd === 2) { write(fd, buf); return buf.length; }
      return host.writeSync(fd, buf);
    },
    write(fd, buf, offset, length, position, callback) {
      if (fd === 1 || fd === 2) {
        write(fd, buf.subarray(offset, offset + length));
        return callback(null, length);
      }
      if (fd === 0) return callback(errnoError("EBADF", "stdin is not writable"));
      host.write(fd, buf, offset, length, position, callback);
    },
    read(fd, buf, offset, length, position, callback) {
      if (fd === 0) {
        const piece = stdin.subarray(stdinAt, stdinAt + length);
        buf.set(piece, offset);
        stdinAt += piece.length;
        return callback(null, piece.length);
      }
      if (stdio(fd)) return callback(errnoError("EBADF", "not readable"));
      host.read(fd, buf, offset, length, position, callback);
    },
    fstat(fd, callback) {
      if (stdio(fd)) return callback(null, charDevice);
      host.fstat(fd, callback);
    },
    close(fd, callback) {
      if (stdio(fd)) return callback(null);
      host.close(fd, callback);
    },
    fsync(fd, callback) {
      if (stdio(fd)) return callback(null);
      host.fsync(fd, callback);
    },
  };
  for (const name of ["open", "stat", "lstat", "mkdir", "readdir", "rename", "rmdir", "unlink", "ftruncate",
                      "truncate", "chmod", "fchmod", "chown", "fchown", "lchown", "utimes", "link", "symlink",
                      "readlink"]) {
    fs[name] = (...args) => host[name](...args);
  }
  return fs;
}

function goProcess(cwd) {
  return {
    pid: 1, ppid: 0, argv0: "kubectl",
    getuid: () => 1000, getgid: () => 1000, geteuid: () => 1000, getegid: () => 1000, getgroups: () => [1000],
    umask: () => 0o22,
    cwd: () => cwd,
    chdir: () => { throw errnoError("ENOSYS", "chdir is not available to kubectl here"); },
  };
}

function concat(pieces) {
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of pieces) { out.set(p, at); at += p.length; }
  return out;
}

export class Kubectl {
  constructor(module) {
    this.module = module;
  }

  /**
   * Run `kubectl ARGS` to its end; resolves {code, stdout, stderr, stopped} (bytes).
   * options: args, env (object), cwd, stdin (bytes), fs (Node's fs API), server (origin kubeconfig names),
   * serve (see fetchFor), onStdout(bytes) → true to stop the run there (a watch has printed enough),
   * timeoutMs (then code 124; 0 when `streams`, a command that runs until stopped, as a watch stopped by a signal).
   */
  async run({ args, env = {}, cwd = "/", stdin = new Uint8Array(0), fs, server, serve, onStdout = null,
              timeoutMs = 0, streams = false }) {
    installFetch();
    const go = new globalThis.Go();
    go.argv = ["kubectl", ...args];
    go.env = { ...env };
    const out = [], err = [];
    let settle;
    const ended = new Promise((resolve) => { settle = resolve; });
    let live = true;
    const write = (fd, bytes) => {
      const copy = new Uint8Array(bytes);
      (fd === 1 ? out : err).push(copy);
      if (fd === 1 && onStdout && live && onStdout(copy)) settle({ stopped: true });
    };
    go.exit = (code) => {
      go._resume = () => {};  // a callback still pending (a read, a timer) must not wake an exited program
      settle({ code });
    };
    const origin = new URL(server).origin;
    const instance = await WebAssembly.instantiate(this.module, go.importObject);
    const saved = { fs: globalThis.fs, process: globalThis.process };
    routes.set(origin, fetchFor(serve, () => live));
    globalThis.fs = goFs(fs, stdin, write);
    globalThis.process = goProcess(cwd);
    let timer = null;
    try {
      go.run(instance).catch((error) => settle({ error }));  // Go reads process and fs while it starts
    } finally {
      globalThis.process = saved.process;
    }
    if (timeoutMs > 0) timer = setTimeout(() => settle({ timedOut: true }), timeoutMs);
    const end = await ended;
    live = false;
    clearTimeout(timer);
    routes.delete(origin);
    globalThis.fs = saved.fs;
    // the program has exited or is stopped: none of its timers or callbacks may run it again
    for (const id of go._scheduledTimeouts.values()) clearTimeout(id);
    go._scheduledTimeouts.clear();
    go._resume = () => {};
    let code = end.code;
    if (end.stopped) code = 0;
    if (end.timedOut) code = streams ? 0 : 124;
    if (end.error) {
      err.push(encoder.encode(`kubectl.wasm failed: ${end.error}\n`));
      code = 2;
    }
    return { code, stdout: concat(out), stderr: concat(err), stopped: Boolean(end.stopped || end.timedOut) };
  }
}

/** Node's fs API (the callback half Go uses) over Emscripten's FS, the file system Pyodide's Python sees. */
export function emscriptenFs(FS, ERRNO_CODES) {
  const names = Object.fromEntries(Object.entries(ERRNO_CODES).map(([name, n]) => [n, name]));
  const fail = (callback, e) => {
    if (e && typeof e.errno === "number") return callback(errnoError(names[e.errno] || "EIO", e.message || ""));
    throw e;
  };
  const call = (fn) => (...args) => {
    const callback = args.pop();
    let value;
    try { value = fn(...args); } catch (e) { return fail(callback, e); }
    callback(null, value);
  };
  const stats = (s) => ({
    dev: s.dev, ino: s.ino, mode: s.mode, nlink: s.nlink, uid: s.uid, gid: s.gid, rdev: s.rdev, size: s.size,
    blksize: s.blksize, blocks: s.blocks, atimeMs: +s.atime, mtimeMs: +s.mtime, ctimeMs: +s.ctime,
    isDirectory: () => FS.isDir(s.mode),
  });
  const stream = (fd) => {
    const s = FS.getStream(fd);
    if (!s) throw new FS.ErrnoError(ERRNO_CODES.EBADF);
    return s;
  };
  return {
    open: call((path, flags, mode) => FS.open(path, flags, mode).fd),
    close: call((fd) => { FS.close(stream(fd)); }),
    read: call((fd, buf, offset, length, position) =>
      FS.read(stream(fd), buf, offset, length, position === null ? undefined : position)),
    write: call((fd, buf, offset, length, position) =>
      FS.write(stream(fd), buf, offset, length, position === null ? undefined : position)),
    writeSync: (fd, buf) => FS.write(stream(fd), buf, 0, buf.length),
    fstat: call((fd) => stats(FS.stat(stream(fd).path))),
    stat: call((path) => stats(FS.stat(path))),
    lstat: call((path) => stats(FS.lstat(path))),
    mkdir: call((path, mode) => { FS.mkdir(path, mode); }),
    readdir: call((path) => FS.readdir(path).filter((n) => n !== "." && n !== "..")),
    rename: call((from, to) => { FS.rename(from, to); }),
    rmdir: call((path) => { FS.rmdir(path); }),
    unlink: call((path) => { FS.unlink(path); }),
    fsync: call(() => {}),
    ftruncate: call((fd, length) => { FS.ftruncate(fd, length); }),
    truncate: call((path, length) => { FS.truncate(path, length); }),
    chmod: call((path, mode) => { FS.chmod(path, mode); }),
    fchmod: call((fd, mode) => { FS.fchmod(fd, mode); }),
    chown: call(() => {}),
    fchown: call(() => {}),
    lchown: call(() => {}),
    utimes: call((path, atime, mtime) => { FS.utime(path, atime * 1000, mtime * 1000); }),
    link: call(() => { throw new FS.ErrnoError(ERRNO_CODES.EPERM); }),
    symlink: call((target, path) => { FS.symlink(target, path); }),
    readlink: call((path) => FS.readlink(path)),
  };
}
