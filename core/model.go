package core

import (
	"time"
)

// Quote is a price for sending a number of pages to one destination. Its
// JSON is also how every agent door shows a quote (MCP validate_fax infers
// its output schema from this type: the jsonschema tags describe fields
// there; hostagent renders the same keys in snake_case).
type Quote struct {
	To           string `json:"to" jsonschema:"the destination in E.164"`
	Country      string `json:"country"` // ISO 3166-1 alpha-2
	Pages        int    `json:"pages"`
	Cover        bool   `json:"cover"`
	BilledPages  int    `json:"billedPages"` // pages plus the cover page
	Currency     string `json:"currency"`
	AmountMicros int64  `json:"-"`
	// Amount is the decimal USD string ("0.21"); Cents is the same in cents.
	Amount string `json:"amount" jsonschema:"price in USD, decimal"`
	Cents  int64  `json:"amountCents"`
	Tariff string `json:"tariff"`
}

// IdempotencyRecord remembers the response to a request made with an
// idempotency key.
type IdempotencyRecord struct {
	Scope        string    `db:"scope"` // owner, mode and operation
	Key          string    `db:"key"`
	RequestHash  string    `db:"request_hash"`
	ResponseCode int       `db:"response_code"`
	Response     []byte    `db:"response"`
	CreatedAt    time.Time `db:"created_at"`
}
