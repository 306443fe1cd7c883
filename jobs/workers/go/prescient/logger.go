package prescient

import (
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Logger is where a worker logs, one call per event: the method shapes of log/slog's *slog.Logger (Go 1.21),
// so a *slog.Logger is one as it is. A message is constant; the event's ids and values are attributes,
// alternating keys and values ("check", 12, "job", "order_unshipped"), the worker's name first ("worker").
// For Go 1.19's *log.Logger, LogLogger adapts it.
type Logger interface {
	Debug(msg string, args ...any)
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

// LogLogger adapts a *log.Logger: one line per event, its level, its message and its attributes as key=value
// (a value quoted when it has a space, a quote, an '=' or an unprintable character), as slog's text handler
// writes them: `WARN check failed, retried worker=billing-1 check=12 job=order_unshipped error="CRM down"`.
func LogLogger(l *log.Logger) Logger { return textLogger{l} }

type textLogger struct{ l *log.Logger }

func (t textLogger) Debug(msg string, args ...any) { t.write("DEBUG", msg, args) }
func (t textLogger) Info(msg string, args ...any)  { t.write("INFO", msg, args) }
func (t textLogger) Warn(msg string, args ...any)  { t.write("WARN", msg, args) }
func (t textLogger) Error(msg string, args ...any) { t.write("ERROR", msg, args) }

func (t textLogger) write(level, msg string, args []any) {
	var b strings.Builder
	b.WriteString(level)
	b.WriteByte(' ')
	b.WriteString(msg)
	for len(args) > 0 {
		// As slog: a key that is not a string, or a last key without a value, is a value of the key !BADKEY.
		key, value := "!BADKEY", args[0]
		if k, ok := args[0].(string); ok && len(args) > 1 {
			key, value, args = k, args[1], args[2:]
		} else {
			args = args[1:]
		}
		b.WriteByte(' ')
		b.WriteString(textValue(key))
		b.WriteByte('=')
		b.WriteString(textValue(value))
	}
	t.l.Print(b.String())
}

// textValue is a value as one word: quoted (Go's syntax) when it would not read back as one.
func textValue(v any) string {
	var s string
	switch v := v.(type) {
	case time.Time:
		s = v.UTC().Format(time.RFC3339Nano)
	case error:
		s = v.Error()
	case fmt.Stringer:
		s = v.String()
	default:
		s = fmt.Sprint(v)
	}
	if s == "" || strings.IndexFunc(s, func(r rune) bool {
		return r == ' ' || r == '=' || r == '"' || !unicode.IsPrint(r)
	}) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// namedLogger gives every event of a worker its name, as the first attribute.
type namedLogger struct {
	l    Logger
	name string
}

func (n namedLogger) Debug(msg string, args ...any) { n.l.Debug(msg, n.with(args)...) }
func (n namedLogger) Info(msg string, args ...any)  { n.l.Info(msg, n.with(args)...) }
func (n namedLogger) Warn(msg string, args ...any)  { n.l.Warn(msg, n.with(args)...) }
func (n namedLogger) Error(msg string, args ...any) { n.l.Error(msg, n.with(args)...) }

func (n namedLogger) with(args []any) []any { return append([]any{"worker", n.name}, args...) }
