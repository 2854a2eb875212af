// Package inproc serves an http.Handler as an http.RoundTripper, so the
// payment stand-ins (stripetest, tempotest) answer an http.Client in
// process, without a listener.
package inproc

import (
	"net/http"
	"net/http/httptest"
)

// Transport returns a RoundTripper that hands every request to h. The
// request's context is honoured before the call; the answer is whole when
// returned.
func Transport(h http.Handler) http.RoundTripper { return transport{h} }

type transport struct{ h http.Handler }

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	// A RoundTripper must not change the request and must close its
	// body; the handler parses (and so changes) a clone.
	in := r.Clone(r.Context())
	if in.Body == nil {
		in.Body = http.NoBody
	} else {
		defer r.Body.Close()
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, in)
	res := rec.Result()
	res.Request = r
	return res, nil
}
