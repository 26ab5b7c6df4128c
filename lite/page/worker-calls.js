// Loaded by every page of the site before the app (lite/build.py puts it there).
//
// The Pyodide kernel runs in a Web Worker, and the page calls into it through coincident: each call posts a message
// to the worker, then waits on a shared buffer with Atomics.waitAsync until the worker has written its answer there
// and notified. coincident starts that wait only after posting, and expects a promise from it; when the worker
// answers first (a loaded machine, a quick answer), waitAsync finds the buffer already changed and answers
// "not-equal" at once, with no promise, and the call throws "A(...).value.then is not a function". For an
// execute_request that call is the cell's execute: the kernel then never sends that cell's execute_reply nor its
// idle status, so the cell keeps [*] and no execution count while the next cells run.
//
// Here such a message (one property, whose value is an array holding the call's shared Int32Array second) is posted
// one microtask later: the page's wait has then always begun before the worker can answer, and the answer wakes it.
(() => {
  if (typeof Worker === 'undefined' || typeof SharedArrayBuffer === 'undefined') return;
  const post = Worker.prototype.postMessage;
  const isCall = (message) => {
    if (message === null || typeof message !== 'object') return false;
    const keys = Object.keys(message);
    if (keys.length !== 1) return false;
    const call = message[keys[0]];
    return Array.isArray(call) && call[1] instanceof Int32Array && call[1].buffer instanceof SharedArrayBuffer;
  };
  Worker.prototype.postMessage = function (message, ...rest) {
    if (!isCall(message)) return post.call(this, message, ...rest);
    queueMicrotask(() => {
      try {
        post.call(this, message, ...rest);
      } catch (error) {
        console.error('a call to the kernel could not be posted', error);
      }
    });
  };
})();
