// Command conformance-driver runs the Go client's worker for the conformance harness (jobs/workers/conformance):
//
//	conformance-driver work --name NAME --classes C1[,C2...] [--concurrency N] [--batch N] [--prefetch D]
//	                        [--lease-seconds 2] [--no-heartbeat]
//	conformance-driver drain --classes C1[,C2...] [--concurrency N] [--batch N] [--prefetch D] [--batch-handler]
//
// work: one generic handler for every class, driven by the check's payload (sleep_ms, answer: done, next,
// at, error, result), recording each run in conformance_ledger first; SIGTERM stops it gracefully (exit 0).
// drain: no-op handlers (or one no-op batch handler per class) until nothing is due, then prints the rate
// (for benchmarks). --concurrency, --batch and --prefetch not given are the client's defaults (Options).
// The database is PRESCIENT_DATABASE_URL.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
)

// payload is the conformance contract's instructions to the handler.
type payload struct {
	SleepMS     int64           `json:"sleep_ms"`
	Answer      string          `json:"answer"`
	NextSeconds *float64        `json:"next_seconds"`
	At          string          `json:"at"`
	Error       *string         `json:"error"`
	Result      json.RawMessage `json:"result"`
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if len(os.Args) < 2 || (os.Args[1] != "work" && os.Args[1] != "drain") {
		fmt.Fprintln(os.Stderr, "usage: conformance-driver work|drain --classes C1[,C2...] [--name NAME] [--concurrency N]"+
			" [--batch N] [--prefetch D] [--lease-seconds 2] [--no-heartbeat] [--batch-handler (drain)]")
		os.Exit(2)
	}
	command := os.Args[1]
	flags := flag.NewFlagSet("conformance-driver "+command, flag.ExitOnError)
	name := flags.String("name", "go-driver", "the worker's name")
	classes := flags.String("classes", "", "the job classes, comma-separated")
	concurrency := flags.Int("concurrency", 0, "handler calls running at once (0: the client's default)")
	batch := flags.Int("batch", 0, "the most checks a take asks for (0: the client's default)")
	prefetch := flags.Duration("prefetch", 0, "how far ahead a take looks, e.g. 100ms (0: the client's default; negative: free places only)")
	leaseSeconds := flags.Float64("lease-seconds", 2, "the lease of a take")
	noHeartbeat := flags.Bool("no-heartbeat", false, "do not extend leases while handlers run")
	batchHandler := flags.Bool("batch-handler", false, "drain: one batch handler per class, not a handler per check")
	_ = flags.Parse(os.Args[2:])
	if *classes == "" || flags.NArg() > 0 || *concurrency < 0 || *batch < 0 || (*batchHandler && command != "drain") {
		log.Fatalf("conformance-driver: --classes is required, no other arguments are, --concurrency and --batch " +
			"are not negative, --batch-handler is for drain")
	}
	url := os.Getenv("PRESCIENT_DATABASE_URL")
	if url == "" {
		log.Fatalf("conformance-driver: PRESCIENT_DATABASE_URL is not set")
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	pool, err := pgxpool.Connect(ctx, url)
	if err != nil {
		log.Fatalf("conformance-driver: %v", err)
	}
	defer pool.Close()

	options := prescient.Options{
		Name:        *name,
		Concurrency: *concurrency,
		BatchSize:   *batch,
		Prefetch:    *prefetch,
		Lease:       time.Duration(*leaseSeconds * float64(time.Second)),
		NoHeartbeat: *noHeartbeat,
	}
	if command == "drain" {
		os.Exit(drain(ctx, pool, options, strings.Split(*classes, ","), *batchHandler))
	}

	// The ledger's inserts are autocommitted on connections of their own, apart from the worker's.
	ledger, err := pgxpool.Connect(ctx, url)
	if err != nil {
		log.Fatalf("conformance-driver: %v", err)
	}
	defer ledger.Close()
	worker := prescient.NewWorker(pool, options)
	handler := func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		return handle(ctx, ledger, *name, c)
	}
	for _, class := range strings.Split(*classes, ",") {
		worker.Handle(class, handler)
	}
	if err := worker.Run(ctx); err != nil {
		log.Fatalf("conformance-driver: %v", err)
	}
}

func handle(ctx context.Context, ledger *pgxpool.Pool, worker string, c *prescient.Check) (prescient.Answer, error) {
	if _, err := ledger.Exec(ctx, `INSERT INTO conformance_ledger (check_id, worker, language, due_at, check_count)
	  VALUES ($1, $2, 'go', $3, $4)`, c.ID, worker, c.DueAt, c.CheckCount); err != nil {
		return prescient.Answer{}, fmt.Errorf("ledger: %w", err)
	}
	var p payload
	if len(c.Payload) > 0 {
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			return prescient.Answer{}, fmt.Errorf("payload: %w", err)
		}
	}
	if p.SleepMS > 0 {
		select {
		case <-time.After(time.Duration(p.SleepMS) * time.Millisecond):
		case <-ctx.Done(): // the lease was lost, or the grace is over
			log.Printf("check %d (%s): interrupted: %v", c.ID, c.Job, ctx.Err())
			return prescient.Answer{}, ctx.Err()
		}
	}
	answer, err := answerFor(c, p)
	if err != nil {
		log.Printf("check %d (%s): count %d, error: %v", c.ID, c.Job, c.CheckCount, err)
		return answer, err
	}
	if answer.Next.IsZero() {
		log.Printf("check %d (%s): count %d, done", c.ID, c.Job, c.CheckCount)
	} else {
		log.Printf("check %d (%s): count %d, next at %s", c.ID, c.Job, c.CheckCount, answer.Next.UTC().Format(time.RFC3339Nano))
	}
	return answer, nil
}

func answerFor(c *prescient.Check, p payload) (prescient.Answer, error) {
	switch p.Answer {
	case "", "done":
		return prescient.Done(), nil
	case "next":
		seconds := 60.0
		if p.NextSeconds != nil {
			seconds = *p.NextSeconds
		}
		return prescient.NextCheckAt(c.DueAt.Add(time.Duration(seconds * float64(time.Second)))), nil
	case "at":
		at, err := parseISO(p.At)
		if err != nil {
			return prescient.Answer{}, err
		}
		return prescient.NextCheckAt(at), nil
	case "error":
		text := "conformance error"
		if p.Error != nil {
			text = *p.Error
		}
		return prescient.Answer{}, errors.New(text)
	case "result":
		return prescient.DoneWithResult(p.Result), nil // absent: no result
	}
	return prescient.Answer{}, fmt.Errorf("payload.answer %q is not done, next, at, error or result", p.Answer)
}

// parseISO reads an ISO-8601 time with its offset: 2026-05-01T10:00:00Z, 2026-05-01 10:00:00+02 (PostgreSQL's).
func parseISO(text string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999Z07"} {
		if at, err := time.Parse(layout, text); err == nil {
			return at, nil
		}
	}
	return time.Time{}, fmt.Errorf("payload.at %q is not an ISO-8601 time with an offset", text)
}

// drain runs no-op handlers until nothing is due and prints how fast the checks went.
func drain(ctx context.Context, pool *pgxpool.Pool, options prescient.Options, classes []string, batchHandler bool) int {
	var count int64
	options.Logger = prescient.LogLogger(log.New(io.Discard, "", 0))
	options.OnSettled = func(st prescient.Settlement) {
		if st.Outcome != "done" {
			log.Printf("check %d (%s): %s: %s", st.CheckID, st.Job, st.Outcome, st.LastError)
		}
	}
	worker := prescient.NewWorker(pool, options)
	for _, class := range classes {
		if batchHandler {
			worker.HandleBatch(class, func(_ context.Context, checks []*prescient.Check) ([]prescient.Answer, error) {
				atomic.AddInt64(&count, int64(len(checks)))
				return make([]prescient.Answer, len(checks)), nil // the zero Answer: done
			})
			continue
		}
		worker.Handle(class, func(context.Context, *prescient.Check) (prescient.Answer, error) {
			atomic.AddInt64(&count, 1)
			return prescient.Done(), nil
		})
	}
	started := time.Now()
	if err := worker.Drain(ctx); err != nil {
		log.Printf("conformance-driver: %v", err)
		return 1
	}
	elapsed := time.Since(started)
	fmt.Printf("drained %d checks in %.3f s: %.0f checks/s\n", count, elapsed.Seconds(), float64(count)/elapsed.Seconds())
	return 0
}
