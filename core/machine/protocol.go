package machine

import (
	"encoding/json"
	"time"
)

// What core takes from and gives to the adapter that speaks the Machine
// Payments Protocol. The wire format (the Authorization: Payment
// credential, Accept-Payment, WWW-Authenticate, Payment-Receipt, problem
// types and statuses) is the adapter's (rest/mpp); core works on these
// typed values and decides.

// Challenge is one offer of a 402 as core makes, binds and checks it: pay
// Request with Method under Intent before Expires, for the body whose
// digest is Digest, with Opaque echoed back. Its JSON form is what a
// machine request stores (machine_requests.challenges).
type Challenge struct {
	// ID is the binding of the other fields under the server's secret
	// (Binder).
	ID     string `json:"id"`
	Realm  string `json:"realm"`
	Method string `json:"method"` // "stripe", "tempo"
	Intent string `json:"intent"` // "charge"
	// Request is a JSON object: for charge, amount and currency (and
	// recipient, methodDetails, description, externalId).
	Request json.RawMessage `json:"request"`
	// Expires is when the challenge can no longer be paid; zero: never.
	// It is sent (and bound) to the second.
	Expires time.Time `json:"expires"`
	// Digest is the body's digest (FaxRequest.BodyDigest): the paid retry
	// must send the same bytes.
	Digest string `json:"digest,omitempty"`
	// Opaque carries the request_id (and from the first re-issue on the
	// generation). nil is absent; an empty map is present, and bound, as
	// {}.
	Opaque map[string]string `json:"opaque"`
}

// Expired reports whether the challenge has an expiry at or before now
// (its expiry as sent, to the second).
func (c Challenge) Expired(now time.Time) bool {
	return !c.Expires.IsZero() && !now.Before(c.Expires.Truncate(time.Second))
}

// Binder computes the id of a challenge: HMAC-SHA256 under secret over the
// protocol's seven wire slots (realm, method, intent, request, expires,
// digest, opaque, each as the wire encodes it), the id every MPP SDK
// computes, so ids stay portable. It fails for a challenge the wire cannot
// carry (a request that is no JSON object, a method that is no token).
// rest/mpp implements it; core decides what is bound, binds what it
// offers, and verifies a presented challenge by binding it again and
// comparing.
type Binder interface {
	Bind(secret []byte, c Challenge) (id string, err error)
	// Issue binds c as Bind does and also renders it as the adapter sends
	// it (FaxResult.Rendered), from the encoding it bound; rendered is ""
	// when the adapter could not send it, which its answer then reports.
	Issue(secret []byte, c Challenge) (id, rendered string, err error)
}

// Credential is a payer's Payment credential as the adapter read it: the
// challenge it echoes, decoded but not trusted (core binds it again), the
// payer's optional source (a did:pkh address), and the method's payload
// (stripe {spt}, tempo {type, hash}).
type Credential struct {
	Challenge Challenge
	Source    string
	Payload   json.RawMessage
}

// RefusalKind is why a machine payment was not taken. The adapter maps
// each kind to the protocol's problem type and HTTP status (rest: one
// table); every kind is answered with the request's challenges.
type RefusalKind uint8

const (
	_ RefusalKind = iota
	// PaymentRequired: the request carried no credential.
	PaymentRequired
	// MalformedCredential: the credential could not be read.
	MalformedCredential
	// InvalidChallenge: the echoed challenge is none this server issued
	// (altered, bound under another secret, for another realm, unreadable)
	// or it was used for another request already.
	InvalidChallenge
	// MethodUnsupported: the credential's method is not on offer.
	MethodUnsupported
	// PaymentExpired: the challenge expired unpaid.
	PaymentExpired
	// VerificationFailed: the challenge was for another body or
	// request_id, the method refused the credential, or the payment is not
	// settled yet (then with FaxResult.RetryAfter).
	VerificationFailed
	// PaymentActionRequired: the credential needs its holder's action
	// (3-D Secure), which a machine cannot take.
	PaymentActionRequired
)

// RefusalKinds lists every kind, for adapters' tables and their tests.
func RefusalKinds() []RefusalKind {
	return []RefusalKind{PaymentRequired, MalformedCredential, InvalidChallenge, MethodUnsupported, PaymentExpired,
		VerificationFailed, PaymentActionRequired}
}

func (k RefusalKind) String() string {
	switch k {
	case PaymentRequired:
		return "payment required"
	case MalformedCredential:
		return "malformed credential"
	case InvalidChallenge:
		return "invalid challenge"
	case MethodUnsupported:
		return "method unsupported"
	case PaymentExpired:
		return "payment expired"
	case VerificationFailed:
		return "verification failed"
	case PaymentActionRequired:
		return "payment action required"
	}
	return "unknown refusal"
}

// Refusal is a payment not taken: why, and a detail safe to show the payer
// (never credential bytes).
type Refusal struct {
	Kind   RefusalKind
	Detail string
}

// Receipt says what settled a paid fax's payment. It is derived from the
// charge that paid the fax, so every answer of a paid request carries the
// same receipt.
type Receipt struct {
	Status    string    // always "success": failures are refusals
	Method    string    // "stripe", "tempo"
	Timestamp time.Time // when the charge was recorded
	// Reference is the method's own id of the payment (a Stripe
	// PaymentIntent pi_…, a transaction hash), or the charge's id when the
	// method gave none.
	Reference   string
	ChallengeID string // the challenge paid
	ExternalID  string // the request_id
}
