'use strict';
// An Express app on 127.0.0.1 for the duration of a test, and requests to it.

async function listen(app) {
  const server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    base,
    // { status, body, headers } of one request; options as fetch's, headers as a plain object.
    async request(path, options = {}) {
      const res = await fetch(base + path, options);
      return { status: res.status, body: await res.text(), headers: Object.fromEntries(res.headers) };
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

module.exports = { listen };
