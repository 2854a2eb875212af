package web

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/faxhub/faxhub/core"
)

// Defaults of BodyDeadlines.
const (
	DefaultBodyTimeout   = 30 * time.Second
	DefaultStreamGrace   = 30 * time.Second
	DefaultStreamMinRate = 64 << 10 // bytes per second
)

// BodyDeadlines bound how long a request body may take to arrive. The
// server has no ReadTimeout (a 50 MB upload over a slow link must not be
// cut at a fixed time), so without these a client trickling one byte every
// few seconds held a connection and a handler for as long as it liked.
type BodyDeadlines struct {
	// Body is the time to receive the whole body of an ordinary request
	// (JSON, forms). Zero: DefaultBodyTimeout.
	Body time.Duration
	// Streamed bodies (file uploads) must arrive at StreamMinRate bytes per
	// second on average, counted after StreamGrace: the deadline is
	// start + StreamGrace + received/StreamMinRate, moved on as bytes
	// arrive. Zeros: the defaults.
	StreamGrace   time.Duration
	StreamMinRate int64
	// Stream reports the requests whose bodies are streamed files.
	Stream func(*http.Request) bool
}

func (d BodyDeadlines) withDefaults() BodyDeadlines {
	if d.Body <= 0 {
		d.Body = DefaultBodyTimeout
	}
	if d.StreamGrace <= 0 {
		d.StreamGrace = DefaultStreamGrace
	}
	if d.StreamMinRate <= 0 {
		d.StreamMinRate = DefaultStreamMinRate
	}
	return d
}

// ReadDeadlines sets a read deadline on the connection of every request
// with a body, per BodyDeadlines. A body that misses it fails to read with
// a KindTimeout error (408 request_timeout; RefuseInvalidText answers it
// for the bodies it reads ahead, the handler for streamed ones) and the server
// closes the connection. Once the body has been read to its end the
// server lifts the deadline itself (net/http clears it when it starts
// watching the connection for the next request), so a handler working on
// after that is not cut off.
func ReadDeadlines(next http.Handler, d BodyDeadlines) http.Handler {
	d = d.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		b := &deadlineBody{ReadCloser: r.Body, rc: http.NewResponseController(w), start: time.Now()}
		if d.Stream != nil && d.Stream(r) {
			b.grace, b.rate = d.StreamGrace, d.StreamMinRate
			b.deadline = b.start.Add(d.StreamGrace)
		} else {
			b.deadline = b.start.Add(d.Body)
		}
		if err := b.rc.SetReadDeadline(b.deadline); err != nil {
			// Not a server connection (tests with a recorder): nothing to
			// bound.
			next.ServeHTTP(w, r)
			return
		}
		r.Body = b
		next.ServeHTTP(w, r)
	})
}

// deadlineBody moves a streamed body's deadline on as bytes arrive and
// turns a missed deadline into a client error.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	start    time.Time
	deadline time.Time
	grace    time.Duration // zero: a fixed deadline
	rate     int64
	received int64
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.received += int64(n)
	switch {
	case isTimeout(err):
		e := core.Errorf(core.KindTimeout, core.CodeRequestTimeout,
			"the request body did not arrive in time (%d bytes in %s); send it without pauses", b.received, time.Since(b.start).Round(time.Millisecond))
		e.Err = err
		return n, e
	case err == nil && b.rate > 0:
		next := b.start.Add(b.grace + time.Duration(float64(b.received)/float64(b.rate)*float64(time.Second)))
		if next.After(b.deadline) {
			b.deadline = next
			_ = b.rc.SetReadDeadline(next)
		}
	}
	return n, err
}

// IsBodyTimeout reports a body read that failed because the body did not
// arrive in time: the error deadlineBody returns, or a bare read deadline
// (a connection without ReadDeadlines). It is the one test every reader of
// a body uses, so a slow body is a 408 on every route, never a 500 or an
// authentication failure.
func IsBodyTimeout(err error) bool {
	return core.ErrorKind(err) == core.KindTimeout || isTimeout(err)
}

// BodyTimeoutError is the KindTimeout error (HTTP 408, request_timeout)
// of a body read that IsBodyTimeout reports.
func BodyTimeoutError(err error) error {
	if core.ErrorKind(err) == core.KindTimeout {
		return err
	}
	e := core.Errorf(core.KindTimeout, core.CodeRequestTimeout, "the request body did not arrive in time; send it without pauses")
	e.Err = err
	return e
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
