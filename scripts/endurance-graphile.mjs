// graphile-worker's side of `scripts/endurance.sh --peers`: graphile-worker (from the peers' harness's
// node_modules, the folder PEERS_NODE_MODULES) runs the jobs the soak's load enqueues into its database
// (DATABASE_URL), and for each 10 s from START (epoch seconds) appends one line to OUT:
//   WINDOW FINISHED_PER_S P50_MS P99_MS
// the window's number (1 for START..START+10 s), the jobs finished per second in it, and their lateness:
// the time graphile-worker wrote the job's completion back (its job:complete event) minus the job's run_at.
// Its schema is migrated beforehand (graphile-worker's own `--schema-only`).
//   node scripts/endurance-graphile.mjs START OUT [CONCURRENCY] [POLL_INTERVAL_MS]
// The tasks, the closest graphile-worker has to the soak's mix: noop; emit (a row into endurance.event,
// as prescient's emit writes its outbox, though not in the completion's transaction); again (its first run
// adds the job again 2 s later, as prescient's sql class asks again; only the second run finishes); tick
// (the recurring schedules' stand-in). A first `again` is not counted, as prescient's figures do not count a
// rescheduled check's first run.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const usage = 'usage: node scripts/endurance-graphile.mjs START OUT [CONCURRENCY] [POLL_INTERVAL_MS]';
const [startText, outFile, concurrencyText = '10', pollText = '100'] = process.argv.slice(2);
const start = Number(startText);
const concurrency = Number(concurrencyText);
const pollInterval = Number(pollText);
for (const [what, value, text] of [['START', start, startText], ['CONCURRENCY', concurrency, concurrencyText],
  ['POLL_INTERVAL_MS', pollInterval, pollText]]) {
  if (!Number.isInteger(value) || value <= 0) {
    console.error(`endurance-graphile.mjs: ${what} must be a positive whole number, not '${text}'\n${usage}`);
    process.exit(2);
  }
}
if (!outFile || !process.env.PEERS_NODE_MODULES || !process.env.DATABASE_URL) {
  console.error(`endurance-graphile.mjs: OUT, PEERS_NODE_MODULES and DATABASE_URL are needed\n${usage}`);
  process.exit(2);
}
const graphile = path.join(process.env.PEERS_NODE_MODULES, 'graphile-worker', 'dist', 'index.js');
const { run, Logger } = await import(pathToFileURL(graphile).href);

const taskList = {
  noop: async () => {},
  tick: async () => {},
  emit: async (payload, helpers) => {
    await helpers.query('INSERT INTO endurance.event (type, payload) VALUES ($1, $2)', [payload.type, payload]);
  },
  again: async (payload, helpers) => {
    if (!payload.again) await helpers.addJob('again', { again: true }, { runAt: new Date(Date.now() + 2000) });
  },
};
const runner = await run({
  connectionString: process.env.DATABASE_URL,
  concurrency,
  pollInterval,
  noHandleSignals: true,
  taskList,
  crontab: '',
  logger: new Logger(() => (level, message) => {
    if (level === 'error') console.error('[graphile-worker]', message);
  }),
});

let finished = []; // [completion time ms, lateness ms] of the jobs finished since the last line
runner.events.on('job:complete', ({ job, error }) => {
  if (error || (job.task_identifier === 'again' && !job.payload.again)) return;
  const now = Date.now();
  finished.push([now, now - new Date(job.run_at).getTime()]);
});

// As PostgreSQL's percentile_cont, which prescient's figures use: interpolated between the nearest ranks.
function percentile(sorted, fraction) {
  if (sorted.length === 0) return 0;
  const at = fraction * (sorted.length - 1);
  const below = Math.floor(at);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (at - below);
}

let window = 1;
function writeWindow() {
  const end = (start + 10 * window) * 1000;
  const inWindow = finished.filter(([at]) => at < end).map(([, late]) => late).sort((a, b) => a - b);
  finished = finished.filter(([at]) => at >= end);
  fs.appendFileSync(outFile, [window, Math.round(inWindow.length / 10), Math.round(percentile(inWindow, 0.5)),
    Math.round(percentile(inWindow, 0.99))].join(' ') + '\n');
  window += 1;
  setTimeout(writeWindow, Math.max(0, (start + 10 * window) * 1000 - Date.now()));
}
setTimeout(writeWindow, Math.max(0, (start + 10) * 1000 - Date.now()));

process.on('SIGTERM', async () => {
  await runner.stop();
  process.exit(0);
});
