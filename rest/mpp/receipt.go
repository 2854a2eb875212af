package mpp

import (
	"encoding/json"
	"fmt"
	"time"
)

// ReceiptHeader carries the receipt, on 2xx responses only.
const ReceiptHeader = "Payment-Receipt"

// Receipt tells the payer what settled its payment. Reference is the
// method's own id (a Stripe PaymentIntent pi_…, a Tempo transaction hash).
type Receipt struct {
	Status      string    // always "success": failures are problems, not receipts
	Method      string    // "stripe", "tempo"
	Timestamp   time.Time // when it settled; rendered RFC 3339 UTC
	Reference   string
	ChallengeID string // optional
	ExternalID  string // optional, echoes the request's externalId
}

type receiptWire struct {
	Status      string `json:"status"`
	Method      string `json:"method"`
	Timestamp   string `json:"timestamp"`
	Reference   string `json:"reference"`
	ChallengeID string `json:"challengeId,omitempty"`
	ExternalID  string `json:"externalId,omitempty"`
}

// Encode renders the receipt as the Payment-Receipt value: base64url
// (no padding) of its JSON.
func (r Receipt) Encode() (string, error) {
	if r.Status == "" {
		r.Status = "success"
	}
	if r.Status != "success" || !isLowerToken(r.Method) || r.Reference == "" || r.Timestamp.IsZero() {
		return "", fmt.Errorf("mpp: receipt needs status success, a method, a reference and a timestamp")
	}
	raw, err := json.Marshal(receiptWire{
		Status: r.Status, Method: r.Method, Timestamp: r.Timestamp.UTC().Format(time.RFC3339Nano),
		Reference: r.Reference, ChallengeID: r.ChallengeID, ExternalID: r.ExternalID,
	})
	if err != nil {
		return "", fmt.Errorf("mpp: encode receipt: %w", err)
	}
	return b64.EncodeToString(raw), nil
}

// ParseReceipt reads a Payment-Receipt value (clients, tests).
func ParseReceipt(s string) (Receipt, error) {
	if len(s) > MaxCredentialBytes {
		return Receipt{}, fmt.Errorf("mpp: receipt too long")
	}
	raw, err := decodeB64URL(s)
	if err != nil {
		return Receipt{}, fmt.Errorf("mpp: receipt is not base64url: %w", err)
	}
	var w receiptWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return Receipt{}, fmt.Errorf("mpp: receipt JSON: %w", err)
	}
	t, err := time.Parse(time.RFC3339Nano, w.Timestamp)
	if err != nil {
		return Receipt{}, fmt.Errorf("mpp: receipt timestamp: %w", err)
	}
	return Receipt{Status: w.Status, Method: w.Method, Timestamp: t, Reference: w.Reference,
		ChallengeID: w.ChallengeID, ExternalID: w.ExternalID}, nil
}
