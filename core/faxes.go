package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// MaxIdempotencyKey bounds Idempotency-Key values.
const MaxIdempotencyKey = 255

// hashRequest fingerprints a request for idempotency comparison.
func HashRequest(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// allow applies a shared GCRA limit on q (the store or a transaction),
// turning refusal into a 429 *Error.
func (s *Kernel) AllowIn(ctx context.Context, q Queries, key string, interval time.Duration, burst int) error {
	ok, wait, err := q.AllowRate(ctx, key, s.now(), interval, burst)
	if err != nil {
		return fmt.Errorf("rate limit %s: %w", key, err)
	}
	if !ok {
		secs := int((wait + time.Second - 1) / time.Second)
		e := Errorf(KindRateLimited, CodeRateLimited, "too many requests; retry in %d s", max(secs, 1))
		e.RetryAfterSeconds = max(secs, 1)
		return e
	}
	return nil
}

// Page is one page of a cursor-paginated list.
type Page[T any] struct {
	Data    []T    `json:"data"`
	HasMore bool   `json:"hasMore"`
	Next    string `json:"nextCursor,omitempty"`
}

// ListLimits bound list page sizes.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

func CheckLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultListLimit, nil
	case limit < 0 || limit > MaxListLimit:
		return 0, Errorf(KindInvalid, CodeInvalidRequest, "limit must be between 1 and %d", MaxListLimit)
	}
	return limit, nil
}
