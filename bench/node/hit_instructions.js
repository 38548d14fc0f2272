'use strict';
// Instructions per hitSync and allowSync on the memory store, one hot key: the native part of each call (N-API's
// callback wrapper and everything under it: reading the arguments and the key, the core's hit, the answer), counted
// by callgrind. Unlike time, the count does not move with the machine's load, so a change that adds work to the hot
// path shows here even where the bench's times hide it (issue 39). The JS around the call (limiter.js, the decision
// object) is JIT code, which callgrind cannot name: it is not counted.
//   node bench/node/hit_instructions.js            prints the counts
//   node bench/node/hit_instructions.js --check    also fails (exit 1) when a count is over its ceiling in
//                                                  hit_instructions_ceiling.txt (scripts/test_node.sh runs this)
// How: callgrind counts only inside FunctionCallbackWrapper::Invoke (every call from JS into the addon goes through
// it). Three runs: N hits of each kind, then 2N of one of them; the difference divided by N is one call, whatever
// start-up costs. The store reads a TestClock: the real clock re-anchors on wall time, which callgrind slows ~50x,
// so its count would vary from run to run. Needs valgrind (scripts/setup.sh) and the addon built (npm ci).

const { execFile } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const N = 5000;
const CEILING_FILE = path.join(__dirname, 'hit_instructions_ceiling.txt');
const TOGGLE = 'v8impl::*FunctionCallbackWrapper::Invoke*';

// In a run under callgrind: `--calls hitSync=A allowSync=B` makes that many calls of each.
function calls(counts) {
  const { Limiter, Store, TestClock } = require('../../node/lib/index');
  const store = new Store('memory://', { testClock: new TestClock(1e12) });
  const limiter = new Limiter({ policy: '1000000000/hour', store });
  let allowed = 0;
  for (let i = 0; i < counts.hitSync; i++) if (limiter.hitSync('user:42').allowed) allowed++;
  for (let i = 0; i < counts.allowSync; i++) if (limiter.allowSync('user:42')) allowed++;
  if (allowed !== counts.hitSync + counts.allowSync) throw new Error('a call was denied: the limit is never reached');
}

function collected(counts) {
  const args = ['--tool=callgrind', '--callgrind-out-file=/dev/null', '--collect-atstart=no', `--toggle-collect=${TOGGLE}`,
    process.execPath, __filename, '--calls', ...Object.entries(counts).map(([k, v]) => `${k}=${v}`)];
  return new Promise((resolve, reject) => {
    execFile('valgrind', args, { maxBuffer: 1 << 24 }, (error, stdout, stderr) => {
      const m = /Collected : (\d+)/.exec(stderr);
      if (error || !m) reject(new Error(`valgrind ${args.join(' ')} failed: ${error ? error.message : ''}\n${stderr}`));
      else resolve(Number(m[1]));
    });
  });
}

function ceilings() {
  const out = {};
  for (const line of fs.readFileSync(CEILING_FILE, 'utf8').split('\n')) {
    const m = /^(\w+)\s+(\d+)\s*$/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

async function main() {
  const check = process.argv.includes('--check');
  const [base, hit2, allow2] = await Promise.all([
    collected({ hitSync: N, allowSync: N }),
    collected({ hitSync: 2 * N, allowSync: N }),
    collected({ hitSync: N, allowSync: 2 * N }),
  ]);
  const counts = { hitSync: (hit2 - base) / N, allowSync: (allow2 - base) / N };
  const limits = check ? ceilings() : {};
  let over = false;
  console.log(`instructions per call, native part (callgrind, memory store, one hot key; Node ${process.version}):`);
  for (const [name, count] of Object.entries(counts)) {
    const limit = limits[name];
    const verdict = limit === undefined ? '' : count <= limit ? `  (ceiling ${limit}: ok)` : `  OVER the ceiling ${limit}`;
    if (check && (limit === undefined || count > limit)) over = true;
    console.log(`  ${name.padEnd(10)} ${count.toFixed(1)}${verdict}`);
  }
  if (over) {
    console.error(`hit_instructions: over a ceiling of ${path.relative(process.cwd(), CEILING_FILE)} (or not in it): ` +
      'the hot path does more work than it did; see that file before raising it');
    process.exit(1);
  }
}

const at = process.argv.indexOf('--calls');
if (at >= 0) {
  calls(Object.fromEntries(process.argv.slice(at + 1).map((a) => a.split('=')).map(([k, v]) => [k, Number(v)])));
} else {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
