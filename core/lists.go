package core

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// MaxIdempotencyKey bounds Idempotency-Key values.
const MaxIdempotencyKey = 255

// HashRequest fingerprints a request for idempotency comparison.
func HashRequest(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
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
