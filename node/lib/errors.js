'use strict';
// Errors carry a `code` (docs/node.md, "Errors"), and a stack that points at the caller's code: invalid arguments
// are thrown (or rejected) with the stack of the API call; store failures are created in the API's async frame.

const codes = Object.freeze({
  INVALID_ARGUMENT: 'ERR_RATEWARDEN_INVALID_ARGUMENT',
  STORE_UNAVAILABLE: 'ERR_RATEWARDEN_STORE_UNAVAILABLE',
  STORE_TIMEOUT: 'ERR_RATEWARDEN_STORE_TIMEOUT',
  STORE: 'ERR_RATEWARDEN_STORE',
  INTERNAL: 'ERR_RATEWARDEN_INTERNAL',
  RATE_LIMIT_TIMEOUT: 'ERR_RATEWARDEN_RATE_LIMIT_TIMEOUT',  // acquire: the wait would exceed timeoutMs
  NATIVE: 'ERR_RATEWARDEN_NATIVE',  // require('ratewarden'): the addon cannot be loaded
  NO_KEY: 'ERR_RATEWARDEN_NO_KEY',  // the HTTP adapters' onKeyError: the request's key cannot be made
  NO_METER_PROVIDER: 'ERR_RATEWARDEN_NO_METER_PROVIDER',  // ratewarden/opentelemetry: only the no-op provider
});

function invalidArgument(message, caller) {
  const error = new Error(message);
  error.code = codes.INVALID_ARGUMENT;
  if (caller) Error.captureStackTrace(error, caller);
  return error;
}

// A failure from the native side, created again here: called in an async function of the API just after its
// await, the new error's stack leads (through V8's async stack traces) to the code that made the call.
function fromNative(error) {
  const out = new Error(error.message);
  out.code = error.code;
  Error.captureStackTrace(out, fromNative);
  return out;
}

// An error thrown by the native side during a synchronous call of `method`: its stack starts at the caller.
function fromCaller(error, method) {
  Error.captureStackTrace(error, method);
  return error;
}

module.exports = { codes, invalidArgument, fromCaller, fromNative };
