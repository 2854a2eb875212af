package faxes

import "context"

// ReceiptType is the JWS typ header of a delivery receipt.
const ReceiptType = "fax-receipt+jwt"

// Receipt is the claims of a signed delivery receipt: what faxhub attests
// of a finished fax, verifiable offline by anyone with faxhub's JWKS.
// Times are Unix seconds, as in every JWT.
type Receipt struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"` // the fax id
	IssuedAt int64  `json:"iat"`
	ID       string `json:"jti"` // unique per receipt issued
	To       string `json:"to"`
	From     string `json:"from,omitempty"`
	// Pages is the pages of the document as faxed (cover included);
	// PagesSent those the receiving machine confirmed.
	Pages     int `json:"pages"`
	PagesSent int `json:"pages_sent"`
	// DocumentSHA256 is the hex SHA-256 of the document as faxed.
	DocumentSHA256 string `json:"document_sha256"`
	Outcome        string `json:"outcome"` // delivered, partial, failed, canceled
	Reason         string `json:"reason,omitempty"`
	Resolution     string `json:"resolution"`
	QueuedAt       int64  `json:"queued_at"`
	CompletedAt    int64  `json:"completed_at"`
	Attempts       int    `json:"attempts"`
	Provider       string `json:"provider"`
	ProviderRef    string `json:"provider_ref,omitempty"`
	// RemoteStationID is the receiving machine's identification, where the
	// provider reports it.
	RemoteStationID string `json:"remote_station_id,omitempty"`
	Mode            string `json:"mode"`
}

// ReceiptSigner signs receipts as compact JWS (EdDSA, typ ReceiptType) with
// a key published, with its kid, in faxhub's JWKS for as long as receipts
// it signed may be verified (the oauth adapter's keyring).
type ReceiptSigner interface {
	SignReceipt(ctx context.Context, r Receipt) (string, error)
	// JWKSURL is where the keys that verify receipts are published.
	JWKSURL() string
}
