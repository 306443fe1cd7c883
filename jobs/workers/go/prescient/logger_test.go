package prescient_test

import (
	"bytes"
	"context"
	"errors"
	"log"
	"sync"
	"testing"
	"time"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
	"github.com/prescient-dev/prescient/jobs/workers/go/prescienttest"
)

// LogLogger writes an event as slog's text handler would: the level, the message, key=value, quoted when a
// value would not read back as one word (so an error's newline never splits the line).
func TestLogLoggerWritesOneLinePerEventWithItsAttributes(t *testing.T) {
	var out bytes.Buffer
	logger := prescient.LogLogger(log.New(&out, "", 0))
	logger.Warn("check failed, retried", "check", int64(12), "error", errors.New("the CRM said \"no\"\nagain"),
		"delay", 1500*time.Millisecond, "retry_at", time.Date(2031, 5, 6, 7, 0, 0, 0, time.FixedZone("CEST", 7200)),
		"reason", "", "a=b", 1, "stray")
	logger.Debug("took checks", "count", 2)
	want := `WARN check failed, retried check=12 error="the CRM said \"no\"\nagain" delay=1.5s retry_at=2031-05-06T05:00:00Z` +
		` reason="" "a=b"=1 !BADKEY=stray` + "\nDEBUG took checks count=2\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// event is one call a Logger got.
type event struct {
	level, msg string
	attrs      map[string]any
}

// recordingLogger is a Logger of the application's own, as a *slog.Logger would be: it keeps the events.
type recordingLogger struct {
	mu     sync.Mutex
	events []event
}

func (r *recordingLogger) record(level, msg string, args []any) {
	attrs := map[string]any{}
	for i := 0; i+1 < len(args); i += 2 {
		attrs[args[i].(string)] = args[i+1]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{level, msg, attrs})
}

func (r *recordingLogger) Debug(msg string, args ...any) { r.record("DEBUG", msg, args) }
func (r *recordingLogger) Info(msg string, args ...any)  { r.record("INFO", msg, args) }
func (r *recordingLogger) Warn(msg string, args ...any)  { r.record("WARN", msg, args) }
func (r *recordingLogger) Error(msg string, args ...any) { r.record("ERROR", msg, args) }

func (r *recordingLogger) find(level, msg string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var found []event
	for _, e := range r.events {
		if e.level == level && e.msg == msg {
			found = append(found, e)
		}
	}
	return found
}

// A worker's events reach the application's Logger with their ids as attributes, the worker's name first; the
// routine ones at Debug, with Verbose.
func TestAWorkerLogsEachEventWithItsAttributes(t *testing.T) {
	class := newClass(t, "logged")
	clock := prescienttest.NewClock(time.Date(2031, 5, 6, 7, 0, 0, 0, time.UTC))
	client := &prescient.Client{Clock: clock.Now}
	failing := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "failing"})
	fine := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "fine"})
	logger := &recordingLogger{}
	worker := prescient.NewWorker(db, prescient.Options{Name: "logged-1", Clock: clock.Now, Logger: logger,
		Verbose: true})
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		if c.ID == failing {
			return prescient.Answer{}, errors.New("the CRM said no")
		}
		return prescient.Done(), nil
	})
	clock.Set(clock.Now().Add(time.Second))
	if err := worker.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	retried := logger.find("WARN", "check failed, retried")
	if len(retried) != 1 || retried[0].attrs["worker"] != "logged-1" || retried[0].attrs["check"] != failing ||
		retried[0].attrs["job"] != class || retried[0].attrs["error"] != "the CRM said no" {
		t.Fatalf("the failure's event: %+v", retried)
	}
	if _, ok := retried[0].attrs["retry_at"].(time.Time); !ok {
		t.Fatalf("retry_at is not a time: %+v", retried[0])
	}
	done := logger.find("DEBUG", "check done")
	if len(done) != 1 || done[0].attrs["check"] != fine || done[0].attrs["worker"] != "logged-1" {
		t.Fatalf("the routine settlement's event: %+v", done)
	}
	if len(logger.find("INFO", "worker started")) != 1 || len(logger.find("INFO", "worker stopped")) != 1 {
		t.Fatalf("no start and stop events: %+v", logger.events)
	}
}
