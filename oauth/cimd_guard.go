package oauth

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
)

// Client ID metadata documents are fetched from URLs anyone can name in an
// authorization request, so fetching is bounded twice: a failed fetch is
// remembered (negative cache) and not retried for MetadataFailureTTL, and
// fetches are rate-limited per client IP (core.LimitOAuthMetadataFetch, the
// shared GCRA limiter, so across replicas).

// maxFailedDocuments bounds the negative cache; when full, expired entries
// go first, then arbitrary ones (it is a cache: losing an entry costs one
// refetch).
const maxFailedDocuments = 10000

// failedDocuments remembers metadata document URLs whose fetch failed, per
// replica.
type failedDocuments struct {
	mu      sync.Mutex
	entries map[string]failedDocument
}

type failedDocument struct {
	until  time.Time
	reason string
}

// get returns why id failed, if it failed less than the TTL ago.
func (f *failedDocuments) get(id string, now time.Time) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[id]
	if !ok || !now.Before(e.until) {
		return "", false
	}
	return e.reason, true
}

func (f *failedDocuments) put(id, reason string, until, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.entries == nil {
		f.entries = map[string]failedDocument{}
	}
	if len(f.entries) >= maxFailedDocuments {
		for k, e := range f.entries {
			if !now.Before(e.until) {
				delete(f.entries, k)
			}
		}
		for k := range f.entries {
			if len(f.entries) < maxFailedDocuments {
				break
			}
			delete(f.entries, k)
		}
	}
	f.entries[id] = failedDocument{until: until, reason: reason}
}

// clientIPKey carries the requesting client's address to the client
// lookup fosite makes (storage.GetClient), which has no request.
type clientIPKey struct{}

// withClientIP puts the peer address into every request's context.
func withClientIP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientIPKey{}, web.ClientIP(r))))
	})
}

func clientIPFrom(ctx context.Context) string {
	if ip, ok := ctx.Value(clientIPKey{}).(string); ok && ip != "" {
		return ip
	}
	return "unknown"
}

// allowFetch charges one metadata document fetch to the requesting IP.
func (s *Server) allowFetch(ctx context.Context) error {
	return s.svc.Kernel.Allow(ctx, core.LimitOAuthMetadataFetch, clientIPFrom(ctx))
}

// errFetchRateLimited is the answer when the IP may not fetch now: 429
// temporarily_unavailable (RFC 6749 section 4.1.2.1) with Retry-After.
func errFetchRateLimited(err error) error {
	e := core.AsError(err)
	return core.Errorf(core.KindRateLimited, "temporarily_unavailable",
		"too many client ID metadata document fetches from this address; retry in %d s", max(e.RetryAfterSeconds, 1)).WithRetryAfter(max(e.RetryAfterSeconds, 1))
}

// resolveClient looks a metadata document client up before fosite does, so
// that a rate-limited fetch answers 429 instead of invalid_client. Other
// outcomes are left to fosite, which finds the document stored or the
// failure remembered, without a second fetch. It returns a non-nil error
// only for the rate limit.
func (s *Server) resolveClient(ctx context.Context, id string) error {
	if !isMetadataDocumentID(id) {
		return nil
	}
	if _, err := s.client(ctx, id); core.ErrorKind(err) == core.KindRateLimited {
		return err
	}
	return nil
}
