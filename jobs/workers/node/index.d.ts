// Hand-written declarations of prescient-worker (index.js): types without a compile step.
/// <reference types="node" />

import { EventEmitter } from 'node:events'
import type { Client, Pool, PoolConfig, QueryResult } from 'pg'

/** What the enqueue functions run their statement on: a pg Client or PoolClient (inside your transaction). */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<QueryResult<any>>
}

/** A clock: returns "now". Pinned in tests; without one the database's clock is used. */
export type Clock = () => Date

/** Check ids are bigint in the database: they arrive as strings, as node-postgres gives int8. */
export type CheckId = string

/** The time asked for: exactly one of `at` and `afterSeconds`. */
export type When = { at: Date | string | number; afterSeconds?: never } | { afterSeconds: number; at?: never }

/**
 * A check timed in `calendar`'s open time (docs/business-time.md): `businessDelay` of open time after its time
 * ('4h', '90m', '1h30m', '3bd'), or with none its time if the calendar is open then, else the calendar's next
 * opening. The time may be left out: it is then now; a business delay counts from `at` or from now, never beside
 * `afterSeconds`. An unknown calendar or a malformed delay is a RefusedError.
 */
export type InBusinessTime =
  | { calendar: string; businessDelay?: string; at?: Date | string | number; afterSeconds?: never }
  | { calendar: string; businessDelay?: never; afterSeconds: number; at?: never }

export type OnConflict = 'error' | 'replace' | 'keep' | 'debounce' | 'collect'

/** 0 (first) to 9 (last) among the checks due at the same time. */
export type Priority = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9

/** `P`: the payload's type, as the class's handler declares it (`Check<P>`). */
export type ScheduleOptions<P = unknown> = ((When & { calendar?: never; businessDelay?: never }) | InBusinessTime) & {
  /** The job class (a worker class, or any class of the registry). */
  job: string
  entityName: string
  entityKey: string | number
  /** At most one pending check holds a job key; see onConflict. */
  jobKey?: string
  /** The checks of a group run one at a time, in order. */
  groupKey?: string
  /** Any JSON value; the handler gets it as check.payload. */
  payload?: P
  /**
   * When a pending check holds the job key: 'error' (the default, a ConflictError), 'replace', 'keep',
   * 'debounce' (replace, never past the first enqueue plus maxWaitSeconds) or 'collect' (a digest: the check's
   * payload is { collected: [...] }, every enqueue's payload in arrival order).
   */
  onConflict?: OnConflict
  /** The ceiling of 'debounce' and 'collect' (which need it), in seconds. */
  maxWaitSeconds?: number
  /** 0 (first) to 9 (last) among the checks due at the same time (default 5); another number is a RefusedError. */
  priority?: Priority
  /**
   * The W3C trace context the check is created in (the caller's span, as propagation.inject writes it);
   * each run's handler gets that trace with a span id of its own. A malformed one is a RefusedError.
   */
  traceparent?: string
  /** The trace's vendor state; it goes with a traceparent only. */
  tracestate?: string
  /** Who enqueued it (default: the database user). */
  by?: string
  /** It may fire any time in this window after its time: a herd spreads over the window's slots. */
  windowSeconds?: number
  /** With a jobKey: not scheduled again while a check of the key settled within this long (status deduplicated). */
  dedupeForSeconds?: number
  /** The outcomes dedupeForSeconds looks for (default ['done']). */
  dedupeOutcomes?: string[]
  /** Accept a class the registry does not know yet (deployed later). */
  allowUnknownClass?: boolean
  clock?: Clock
}

export interface Scheduled {
  id: CheckId
  jobKey: string | null
  nextCheckAt: Date | null
  firstCheckAt: Date | null
  status: 'created' | 'replaced' | 'kept' | 'debounced' | 'collected' | 'deduplicated'
}

export type CheckRef = { id: CheckId | number | bigint; jobKey?: never } | { jobKey: string; id?: never }

/** Schedules a check on the caller's connection (it commits or rolls back with the caller's transaction). */
export function schedule<P = unknown>(client: Queryable, options: ScheduleOptions<P>): Promise<Scheduled>

/** Cancels a pending check by id or job key; resolves to its id, or null when none was pending. */
export function cancel(client: Queryable, options: CheckRef & { by?: string; clock?: Clock }): Promise<CheckId | null>

/** Moves a pending check to another time; resolves to null when none was pending. */
export function reschedule(
  client: Queryable,
  options: CheckRef & When & { clock?: Clock },
): Promise<{ id: CheckId; jobKey: string | null; nextCheckAt: Date } | null>

export interface CronAddOptions {
  /** The schedule's id. */
  id: string
  /** A cron expression (five fields), e.g. '0 3 * * *'. */
  spec: string
  /** IANA time zone the spec is read in (default UTC). */
  timeZone?: string
  /** The class of the checks it enqueues (default emit). */
  job?: string
  payload?: unknown
  catchUp?: string
  deadlineSeconds?: number
  windowSeconds?: number
  jitterSeconds?: number
  /**
   * The schedule's further options (overlap, start_at, end_at, max_runs, priority, pause_after_failures,
   * dst_repeated, dst_missing, calendar, when_closed: docs/schedules.md).
   */
  scheduleOptions?: Record<string, unknown>
  by?: string
  clock?: Clock
}

/** Adds a recurring schedule (needs the schema owner's rights); resolves to its version (1). */
export function cronAdd(client: Queryable, options: CronAddOptions): Promise<number>

/**
 * A worker class's policy (docs/workers.md, "Declaring a worker class"); a field left out (or null) is left as
 * it is in the database. Whole seconds.
 */
export interface ClassPolicy {
  /**
   * How many runs a check may have that answer "look again": the run of that number ends it guard_max_checks.
   * 0: no limit. The database's default is 5.
   */
  maxChecks?: number | null
  /** Failed attempts before a check becomes a dead letter. */
  maxAttempts?: number | null
  /** The wait before a failed check is retried, doubling each attempt up to backoffMaxSeconds. */
  backoffSeconds?: number | null
  backoffMaxSeconds?: number | null
  /** The class's timeout in the registry: the C++ runner enforces it on its runs; this worker does not. */
  timeoutSeconds?: number | null
}

/**
 * Makes `job` a worker class if no one declared it, and sets the policy fields given, with prescient_worker's
 * rights (no schema owner, no binary). Resolves to 'added' or 'known'. A runner's class, a bad value or a bad
 * name is a RefusedError, and nothing is written; an unknown field is a TypeError.
 */
export function declareWorkerClass(client: Queryable, job: string, policy?: ClassPolicy & { by?: string }):
  Promise<'added' | 'known'>

/**
 * Sets one pending check's own policy, over its class's (no timeout: that is the class's). A field left out is
 * cleared, so the class's applies to it again. Resolves to false when no check with that id is pending. A bad
 * value is a RefusedError, and nothing is written.
 */
export function setCheckPolicy(client: Queryable, id: CheckId | number | bigint,
  policy?: Omit<ClassPolicy, 'timeoutSeconds'>): Promise<boolean>

/**
 * Puts a worker class's dead letter (the check's latest failure in the history) back as pending, due now by the
 * server's clock, its attempts counted afresh; resolves to the time it is due. ConflictError: pending already,
 * or its job key is held by another pending check; NotFoundError: no failure of it; RefusedError: a runner's.
 */
export function retry(client: Queryable, id: CheckId | number | bigint): Promise<Date>

/** What migrate applied: each migration and function file, in order; the schema version afterwards. */
export interface Migrated {
  applied: Array<{ kind: 'migration' | 'functions'; name: string }>
  version: number
}
/**
 * Creates or upgrades the schema from the bundle this package ships (sql/prescient-bundle.sql), in one
 * transaction, as the schema's owner; a database newer than the bundle is refused (RefusedError).
 * `db`: a pg.Pool, or a connected pg.Client not in a transaction. `slotSeconds`: a new database's slot (60).
 */
export function migrate(db: Pool | Client, options?: { slotSeconds?: number | null }): Promise<Migrated>

/** A check as a handler gets it; `P` is its payload's type (what the class's checks are scheduled with). */
export interface Check<P = unknown> {
  readonly id: CheckId
  readonly job: string
  readonly entityName: string
  readonly entityKey: string
  readonly jobKey: string | null
  readonly groupKey: string | null
  readonly payload: P
  /** The slot it was due at (the check is never run before it). */
  readonly dueAt: Date
  /** The time it was asked for, before rounding to the slot. */
  readonly askedForAt: Date
  /** Runs answered before this one. */
  readonly checkCount: number
  /** Failed attempts before this one. */
  readonly attempts: number
  /** The previous attempt's error. */
  readonly lastError: string | null
  /**
   * For a check scheduled with a trace context: its trace with a span id of this run's own (each attempt is a
   * span), the parent of the handler's work (propagation.extract). Null otherwise.
   */
  readonly traceparent: string | null
  /** The trace's vendor state, or null. */
  readonly tracestate: string | null
  readonly leaseUntil: Date
  /** Aborted when the lease is lost (a heartbeat was refused) or the worker gave the check back on stop. */
  readonly signal: AbortSignal
  /**
   * Settles the check in the handler's own transaction (effects exactly once): calls worker_complete on
   * `client` (a pg Client or PoolClient after BEGIN, on the database of prescient's schema), so the handler's
   * writes and the settlement commit or roll back together. `answer` is what a handler may return. Rejects
   * with a LeaseLostError when the lease was lost (roll the transaction back), a RefusedError when the database
   * refused the answer. The worker then settles the check no more (once the transaction committed).
   */
  completeIn(client: Queryable, answer?: Answer): Promise<Settlement>
  /** Fails the check with `error` in the handler's own transaction (retried, or a dead letter), as completeIn. */
  failIn(client: Queryable, error: Error | string): Promise<Settlement>
}

/**
 * An answer in business time (docs/business-time.md, "Answers in business time"): look again after
 * `businessDelay` of `calendar`'s open time ('4h', '90m', '1h30m', '3bd'), counted from the worker's now (the
 * database's clock, or the worker's pinned one) and rounded up to the slot. An unknown calendar or a malformed
 * delay fails that check alone, with the database's reason (completeIn: a RefusedError).
 */
export interface BusinessTimeAnswer {
  calendar: string
  businessDelay: string
  result?: never
}

/**
 * A handler's answer: a Date (look again then), null or undefined (done), { result } (done, the result
 * kept in the history: any JSON value up to 64 KiB), or { calendar, businessDelay } (look again in business
 * time). Throwing (or rejecting) fails the check with the error's message: it is retried after the class's
 * backoff, or becomes a dead letter.
 */
export type Answer =
  | Date
  | null
  | undefined
  | void
  | { result: unknown; calendar?: never; businessDelay?: never }
  | BusinessTimeAnswer
export type Handler<P = unknown> = (check: Check<P>) => Answer | Promise<Answer>
/**
 * A batch handler: the checks of its class a take brought (up to batchSize), in one call; it answers one
 * answer per check, in their order (an Error fails that check alone). Throwing fails every check of the call.
 */
export type BatchHandler<P = unknown> = (checks: Array<Check<P>>) => Array<Answer | Error> | Promise<Array<Answer | Error>>

/**
 * The facts of a log event, as fields: `event` (took, settled, handler_failed, lease_lost, released, declared,
 * started, stopping, stopped, ...), `worker` (its name), and as the event has them `checkId`, `checkIds`, `job`,
 * `outcome`, `nextCheckAt` (ISO 8601), `error` (the text as it is).
 */
export interface LogFields {
  event: string
  worker: string
  checkId?: CheckId
  checkIds?: CheckId[]
  job?: string
  outcome?: string
  nextCheckAt?: string
  error?: string
  [field: string]: unknown
}

/** Where the worker's events go: one call per event, a message a person reads and its fields. */
export interface Logger {
  info(message: string, fields: LogFields): void
  warn(message: string, fields: LogFields): void
  error(message: string, fields: LogFields): void
}

export interface WorkerOptions {
  /** The application's pool (not closed by the worker; one of its clients is held for LISTEN while started). */
  pool?: Pool | { query: Pool['query']; connect: Pool['connect'] }
  /** Or a connection for the worker's own pool (closed by stop() or close()). */
  connectionString?: string
  connection?: PoolConfig
  /** Names the worker in leases, the history and logs (default hostname:pid). */
  name?: string
  /** Handler calls running at once (default 4); a batch handler's call is one. */
  concurrency?: number
  /** At most this many checks per take, and per batch handler call (default 1000, at most 10 000). */
  batchSize?: number
  /**
   * A take asks for the free places and for what the running handlers will free within this many ms, by
   * their measured time per check (default 100; 0: the free places only). Held in order until a place is free.
   */
  prefetchMs?: number
  /** Lease length in seconds (default 30); heartbeats renew it every third of it. */
  leaseSeconds?: number
  /** Renew leases while handlers run (default true). */
  heartbeat?: boolean
  /** How long stop() lets running handlers finish (default 10 000 ms). */
  graceMs?: number
  /** A pinned clock for tests; without it the database's clock is used. */
  clock?: Clock
  /**
   * Where the events go, one call each (message, fields); default: one line per event on the console's error
   * stream (console.error); false for none.
   */
  logger?: Logger | false
}

export interface Settlement {
  id: CheckId
  job: string
  /** rescheduled, retried, lease_lost, or the history outcome it ended with (done, failed, guard_*: docs/runner.md#how-a-check-ends). */
  outcome: string
  nextCheckAt: Date | null
  lastError: string | null
  /** For lease_lost: the typed error. */
  error?: LeaseLostError
}

export declare class Worker extends EventEmitter {
  constructor(options: WorkerOptions)
  readonly name: string
  readonly classes: string[]
  /** How many handler calls are running now. */
  readonly running: number
  /**
   * Registers the handler of a worker class; the worker takes checks of the classes it has handlers for. With a
   * policy (even {}), start() and the first drain() declare the class with it (declareWorkerClass, as this
   * worker); without one, the class must be declared already. maxChecks is 5 unless the class says otherwise.
   */
  handle<P = unknown>(job: string, handler: Handler<P>, policy?: ClassPolicy): this
  /** Registers a batch handler of a worker class (instead of a handler): many checks in one call. */
  handleBatch<P = unknown>(job: string, handler: BatchHandler<P>, policy?: ClassPolicy): this
  /**
   * Declares the classes registered with a policy, connects, LISTENs and starts the loop; rejects with a
   * RefusedError for an unknown or runner's class, or a policy refused.
   */
  start(): Promise<void>
  /** Runs every check due now (by the clock) until none is left; resolves to their settlements. */
  drain(): Promise<Settlement[]>
  /** Graceful stop: takes nothing more, lets handlers finish within graceMs, releases the rest, closes. */
  stop(options?: { graceMs?: number }): Promise<void>
  /** Calls stop() on these signals (default SIGTERM, SIGINT); returns a function that removes the handlers. */
  stopOnSignals(signals?: NodeJS.Signals[]): () => void
  /** Closes the worker's own pool after drain(). */
  close(): Promise<void>

  on(event: 'settled', listener: (settlement: Settlement, check: Check) => void): this
  on(event: 'leaseLost', listener: (error: LeaseLostError, check: Check) => void): this
  on(event: 'refused', listener: (error: RefusedError) => void): this
  on(event: 'settleFailed', listener: (error: Error, ids: CheckId[]) => void): this
  on(event: 'stopped', listener: () => void): this
  once(event: 'settled', listener: (settlement: Settlement, check: Check) => void): this
  once(event: 'leaseLost', listener: (error: LeaseLostError, check: Check) => void): this
  once(event: 'refused', listener: (error: RefusedError) => void): this
  once(event: 'settleFailed', listener: (error: Error, ids: CheckId[]) => void): this
  once(event: 'stopped', listener: () => void): this
}

/** The base of the client's errors: the check (when there is one) and the database's reason. */
export declare class PrescientError extends Error {
  readonly checkId: CheckId | null
  readonly reason: string
  /** 'PR400', 'PR409', 'PR404', 'lease_lost', or 'refused' (completeIn/failIn: the database refused even a failure). */
  readonly code: string | null
}
/** The database refused the call as bad input (SQLSTATE PR400); nothing of it was written. */
export declare class RefusedError extends PrescientError {}
/** A pending check holds the job key (SQLSTATE PR409; checkId is that check's), or retry's check is pending. */
export declare class ConflictError extends PrescientError {}
/** What the call named does not exist (SQLSTATE PR404): retry of a check with no failure in the history. */
export declare class NotFoundError extends PrescientError {}
/** A settlement refused: the lease ran out (another worker may have the check) or the check is gone. */
export declare class LeaseLostError extends PrescientError {
  constructor(checkId: CheckId, reason: string)
}
