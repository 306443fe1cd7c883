'use strict'

// The worker's logger: one call per event, a message a person reads (it names the check ids) and the same
// facts as fields for a structured logger ({ event, worker, checkId, job, outcome, ... }). Any object with
// info, warn and error taking (message, fields) serves: winston's, a pino adapter, the console's.

// The default: one line per event on stderr (the console's error stream), the time and level first. A newline
// in a message (an error's text) is written as \n, so an event never takes two lines.
function consoleLogger() {
  const write = (level) => (message) => {
    console.error(`${new Date().toISOString()} ${level} ${String(message).replace(/\r?\n/g, '\\n')}`)
  }
  return { info: write('info'), warn: write('warn'), error: write('error') }
}

const SILENT = { info() {}, warn() {}, error() {} }

// The worker's own: each message prefixed with the worker's name, each event's fields with `worker`.
function workerLog(logger, worker) {
  if (logger !== undefined && logger !== false && logger !== null) {
    for (const level of ['info', 'warn', 'error']) {
      if (typeof logger[level] !== 'function') {
        throw new TypeError(`logger.${level} is not a function: a logger has info, warn and error (message, fields)`)
      }
    }
  }
  const sink = logger === false ? SILENT : logger || consoleLogger()
  const prefix = `prescient worker ${worker}: `
  const at = (level) => (message, fields) => sink[level](prefix + message, { worker, ...fields })
  return { info: at('info'), warn: at('warn'), error: at('error') }
}

module.exports = { workerLog, consoleLogger }
