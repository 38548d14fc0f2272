// One member of the polyglot fleet, in Node: `hit URL ALGORITHM POLICY KEY N` prints how many of N hits (all in
// flight at once) were allowed; `peek URL ALGORITHM POLICY KEY` prints what remains.
'use strict';
const { Limiter } = require('../..');

async function main() {
  const [mode, url, algorithm, policy, key, n] = process.argv.slice(2);
  const limiter = new Limiter({ policy, store: url, algorithm });
  if (mode === 'hit') {
    const decisions = await Promise.all(Array.from({ length: Number(n) }, () => limiter.hit(key)));
    console.log(decisions.filter((d) => d.allowed).length);
  } else {
    console.log((await limiter.peek(key)).remaining);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
