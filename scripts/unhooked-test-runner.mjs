// Loaded before each test file (scripts/test.mjs). Node 20's test runner enables an async hook in every test file's
// process to map each async resource to the test that made it. An enabled hook makes every promise pay: 300,000
// awaits take ~350 ms inside a test against ~20 ms without one, and the product code the tests run in their own
// process (supervisors, installers, stand-in servers) is made of promises.
//
// The runner reads that map for two things. Where a test(), describe() or hook call belongs: the test or suite whose
// body is running, which is told here as each one enters its body. Which test an uncaught error or unhandled
// rejection came from: without the hook such an error is reported as coming from no known test, and still fails the
// run (the runner sets the exit code).
import asyncHooks from 'node:async_hooks';

const createHook = asyncHooks.createHook;
asyncHooks.createHook = function (callbacks) {
  // Only the runner's own hook, recognised by its map; any other hook (the product's, a library's) is made as asked.
  if (typeof callbacks?.init !== 'function' || !String(callbacks.init).includes('testResources')) return createHook.call(this, callbacks);
  const told = new WeakSet();
  const runInAsyncScope = asyncHooks.AsyncResource.prototype.runInAsyncScope;
  asyncHooks.AsyncResource.prototype.runInAsyncScope = function (...args) {
    if (!told.has(this) && this.constructor.name !== 'AsyncResource' && 'subtests' in this) {
      told.add(this);
      callbacks.init(this.asyncId(), 'Test', this.triggerAsyncId(), this);
    }
    return runInAsyncScope.apply(this, args);
  };
  const inert = { enable: () => inert, disable: () => inert };
  return inert;
};
