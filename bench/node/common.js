'use strict';
// Shared by the benchmark sections: medians of interleaved rounds, and a look at what one Redis call sends.

const net = require('node:net');

const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

// Runs every measure once per round, interleaved (the machine is shared by the server, the clients and the load
// generator: measures taken side by side see the same noise), and returns each one's values, round by round. Each
// round starts one measure further on, so that no measure always runs right after the same one (and its garbage).
async function interleaved(measures, rounds = ROUNDS) {
  const names = Object.keys(measures);
  const results = Object.fromEntries(names.map((k) => [k, []]));
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(r + i) % names.length];
      results[name].push(await measures[name]());
    }
  }
  return results;
}

// A table row comparing two measures: their medians, and the median of their ratios round by round.
function compare(section, what, ours, other, { format, target = null, lowerIsBetter = false }) {
  const ratios = ours.map((x, i) => (lowerIsBetter ? other[i] / x : x / other[i]));
  return { section, what, ours: format(median(ours)), peer: format(median(other)), ratio: median(ratios), target };
}

// The arguments of the first EVALSHA the server receives while `act` runs (MONITOR): the exact script call a
// decision makes, for redis-benchmark to replay.
function captureEvalsha(port, act) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.setTimeout(5000, () => socket.destroy(new Error('MONITOR saw no EVALSHA')));
    socket.on('error', reject);
    socket.on('data', (data) => {
      text += data.toString('latin1');
      if (text.startsWith('+OK') && !socket.acted) {
        socket.acted = true;
        act().catch(reject);
      }
      const line = text.split('\r\n').find((l) => l.includes('"EVALSHA"'));
      if (line === undefined) return;
      socket.destroy();
      resolve([...line.slice(line.indexOf('"EVALSHA"')).matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]));
    });
    socket.write('MONITOR\r\n');
  });
}

module.exports = { interleaved, compare, captureEvalsha };
