package prescient

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"
)

// The defaults of BatchSize and Prefetch, chosen by measurement (README.md, "Speed").
const (
	defaultBatchSize = 2000
	defaultPrefetch  = 100 * time.Millisecond
)

// Options configure a Worker. Zero values take the defaults named.
type Options struct {
	Name        string // the worker's name in leases and the history; default host-pid
	Concurrency int    // handler calls running at once; default 10
	BatchSize   int    // the most checks a take asks for and a batch handler gets (settled once this many answers wait); default 2000
	// Prefetch: a take asks for the checks the worker can start within Prefetch: its free places, and the
	// places its running handlers will free by then, by their mean time per check so far. Fast handlers are
	// taken in batches (up to BatchSize); slow ones a free place at a time. Default 100ms; negative: free
	// places only.
	Prefetch    time.Duration
	Lease       time.Duration // how long a take holds a check; default 30s (0.1s to 24h)
	NoHeartbeat bool          // do not extend leases while handlers run (a slow handler then loses its check)
	Grace       time.Duration // after a stop, how long running handlers may take to finish; default 10s
	FlushDelay  time.Duration // how long an answer may wait for others to share its settlement, and a take for more room; default 5ms
	MaxSleep    time.Duration // the longest idle sleep between looks at the queue; default 60s

	// Clock, when set, is passed as p_now to every call (tests pin it). Nil: the database's clock.
	Clock func() time.Time
	// Logger gets one call per event, with the event's ids as attributes: a *slog.Logger, or LogLogger of a
	// *log.Logger. Nil: LogLogger on the standard error. LogLogger(log.New(io.Discard, "", 0)) silences it.
	Logger Logger
	// Verbose also logs each take and each routine settlement (done, rescheduled), at the Debug level.
	Verbose bool
	// OnSettled, when set, is called with what the database made of each answer (from one goroutine).
	OnSettled func(Settlement)
}

// Worker runs the checks of its handlers' job classes. Register handlers with Handle, then call Run.
type Worker struct {
	pool          *pgxpool.Pool
	opts          Options
	log           Logger // Options.Logger, each event with the worker's name
	handlers      map[string]HandlerFunc
	batchHandlers map[string]BatchHandlerFunc
	policies      map[string]Policy // the classes declared when the worker starts (WithPolicy)
}

// HandleOption is an option of a handler's registration (Handle, HandleBatch).
type HandleOption func(*handleOptions)

type handleOptions struct{ policy *Policy }

// WithPolicy declares the class as a worker class with this policy when the worker starts (DeclareWorkerClass,
// with prescient_worker's rights): the handler's declaration says how its checks live. A runner's class or a
// bad policy is refused, and Run or Drain returns that *RefusedError before taking anything.
func WithPolicy(p Policy) HandleOption { return func(o *handleOptions) { o.policy = &p } }

// NewWorker makes a worker that works through pool. The LISTEN connection is made with the pool's
// connection settings.
func NewWorker(pool *pgxpool.Pool, opts Options) *Worker {
	if opts.Name == "" {
		host, _ := os.Hostname()
		opts.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 10
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = defaultBatchSize
	}
	if opts.Prefetch == 0 {
		opts.Prefetch = defaultPrefetch
	}
	if opts.BatchSize > maxPerCall {
		opts.BatchSize = maxPerCall
	}
	if opts.Lease <= 0 {
		opts.Lease = 30 * time.Second
	}
	if opts.Grace <= 0 {
		opts.Grace = 10 * time.Second
	}
	if opts.FlushDelay <= 0 {
		opts.FlushDelay = 5 * time.Millisecond
	}
	if opts.MaxSleep <= 0 {
		opts.MaxSleep = time.Minute
	}
	logger := opts.Logger
	if logger == nil {
		logger = LogLogger(log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds))
	}
	return &Worker{pool: pool, opts: opts, log: namedLogger{logger, opts.Name}, handlers: map[string]HandlerFunc{},
		batchHandlers: map[string]BatchHandlerFunc{}, policies: map[string]Policy{}}
}

// Handle registers the handler of a job class (a worker class: prescient jobs add CLASS --worker, or
// WithPolicy), in place of any handler the class had. Call it before Run.
func (w *Worker) Handle(class string, h HandlerFunc, opts ...HandleOption) {
	delete(w.batchHandlers, class)
	w.handlers[class] = h
	w.setOptions(class, opts)
}

// HandleBatch registers a batch handler for a job class, in place of any handler the class had: it gets the
// class's checks a take brought, many in one call (at most BatchSize). A worker whose classes all have batch
// handlers asks for BatchSize checks while a place is free. Call it before Run.
func (w *Worker) HandleBatch(class string, h BatchHandlerFunc, opts ...HandleOption) {
	delete(w.handlers, class)
	w.batchHandlers[class] = h
	w.setOptions(class, opts)
}

func (w *Worker) setOptions(class string, opts []HandleOption) {
	var o handleOptions
	for _, opt := range opts {
		opt(&o)
	}
	delete(w.policies, class)
	if o.policy != nil {
		w.policies[class] = *o.policy
	}
}

// declareClasses declares each class registered WithPolicy, with its policy, before the first take.
func (w *Worker) declareClasses(ctx context.Context) error {
	classes := make([]string, 0, len(w.policies))
	for class := range w.policies {
		classes = append(classes, class)
	}
	sort.Strings(classes)
	for _, class := range classes {
		status, err := DeclareWorkerClass(ctx, w.pool, class, w.policies[class])
		if err != nil {
			return err
		}
		w.log.Info("class declared", "job", class, "status", status)
	}
	return nil
}

// Run takes and runs checks until ctx is cancelled, then stops gracefully: it takes nothing more, lets
// running handlers finish within Options.Grace (their contexts are cancelled after it), settles what they
// answered, gives back (worker_release) the checks still running, and returns nil. It returns an error
// early only when the database refuses the worker itself (a *RefusedError: a class that is not a worker
// class, say); a lost connection is retried.
func (w *Worker) Run(ctx context.Context) error {
	return w.run(ctx, false)
}

// Drain runs what is due now and returns once a take finds nothing and every answer is settled (or ctx
// is cancelled). For tests with a pinned clock, and for cron-style batch runs.
func (w *Worker) Drain(ctx context.Context) error {
	return w.run(ctx, true)
}

func (w *Worker) classes() []string {
	classes := make([]string, 0, len(w.handlers)+len(w.batchHandlers))
	for class := range w.handlers {
		classes = append(classes, class)
	}
	for class := range w.batchHandlers {
		classes = append(classes, class)
	}
	sort.Strings(classes)
	return classes
}

func (w *Worker) run(ctx context.Context, drain bool) error {
	if len(w.handlers)+len(w.batchHandlers) == 0 {
		return errors.New("prescient: the worker has no handlers: call Handle before Run")
	}
	if err := w.declareClasses(ctx); err != nil {
		return err
	}
	s := newSession(w, ctx, drain)
	w.log.Info("worker started", "classes", strings.Join(s.classes, ","), "concurrency", w.opts.Concurrency,
		"batch", w.opts.BatchSize, "prefetch", w.opts.Prefetch, "lease", w.opts.Lease)

	listenCtx, stopListening := context.WithCancel(context.Background())
	listening := make(chan struct{})
	if drain {
		close(listening)
	} else {
		// Listening starts before the first take, so no check enqueued after that take goes unnoticed.
		conn, err := s.connectListener(ctx)
		if err != nil {
			w.log.Warn("cannot LISTEN yet: polling meanwhile, trying again", "error", err)
		}
		go func() {
			defer close(listening)
			s.listen(listenCtx, conn)
		}()
	}
	go s.settleLoop()
	heartbeats := make(chan struct{})
	heartbeatsDone := make(chan struct{})
	if w.opts.NoHeartbeat {
		close(heartbeatsDone)
	} else {
		go func() {
			defer close(heartbeatsDone)
			s.heartbeatLoop(heartbeats)
		}()
	}

	err := s.loop(ctx)

	s.stop()
	close(heartbeats)
	<-heartbeatsDone
	stopListening()
	<-listening
	if err != nil {
		w.log.Error("worker stopped", "error", err)
	} else {
		w.log.Info("worker stopped")
	}
	return err
}
