package mpp

import (
	"errors"
	"fmt"
	"net/http"
)

// ProblemType is one of the protocol's problem-details type URIs.
type ProblemType string

// ProblemBase prefixes every problem type of the protocol.
const ProblemBase = "https://paymentauth.org/problems/"

// The problem types of draft-ryan-httpauth-payment, plus
// payment-action-required, which mppx uses when a card needs the payer's
// action (3-D Secure) and cannot be settled by the machine.
const (
	ProblemPaymentRequired       ProblemType = ProblemBase + "payment-required"
	ProblemPaymentInsufficient   ProblemType = ProblemBase + "payment-insufficient"
	ProblemPaymentExpired        ProblemType = ProblemBase + "payment-expired"
	ProblemVerificationFailed    ProblemType = ProblemBase + "verification-failed"
	ProblemMalformedCredential   ProblemType = ProblemBase + "malformed-credential"
	ProblemInvalidChallenge      ProblemType = ProblemBase + "invalid-challenge"
	ProblemMethodUnsupported     ProblemType = ProblemBase + "method-unsupported"
	ProblemPaymentActionRequired ProblemType = ProblemBase + "payment-action-required"
)

// AllProblemTypes lists every problem type, for tests and documentation.
func AllProblemTypes() []ProblemType {
	return []ProblemType{
		ProblemPaymentRequired, ProblemPaymentInsufficient, ProblemPaymentExpired,
		ProblemVerificationFailed, ProblemMalformedCredential, ProblemInvalidChallenge,
		ProblemMethodUnsupported, ProblemPaymentActionRequired,
	}
}

// Title is the short human-readable summary of the problem type.
func (t ProblemType) Title() string {
	switch t {
	case ProblemPaymentRequired:
		return "Payment Required"
	case ProblemPaymentInsufficient:
		return "Payment Insufficient"
	case ProblemPaymentExpired:
		return "Payment Expired"
	case ProblemVerificationFailed:
		return "Payment Verification Failed"
	case ProblemMalformedCredential:
		return "Malformed Payment Credential"
	case ProblemInvalidChallenge:
		return "Invalid Payment Challenge"
	case ProblemMethodUnsupported:
		return "Payment Method Unsupported"
	case ProblemPaymentActionRequired:
		return "Payment Action Required"
	}
	return "Payment Error"
}

// Status is the HTTP status the problem is answered with. Every type but
// method-unsupported is a 402 carrying fresh challenges: the payer can
// still pay; an unsupported method is the client's request error (400).
func (t ProblemType) Status() int {
	if t == ProblemMethodUnsupported {
		return http.StatusBadRequest
	}
	return http.StatusPaymentRequired
}

// Problem is an RFC 9457 problem details body for a payment failure.
type Problem struct {
	Type        ProblemType `json:"type"`
	Title       string      `json:"title"`
	Status      int         `json:"status"`
	Detail      string      `json:"detail,omitempty"`
	ChallengeID string      `json:"challengeId,omitempty"`
}

// NewProblem fills title and status from the type.
func NewProblem(t ProblemType, detail, challengeID string) Problem {
	return Problem{Type: t, Title: t.Title(), Status: t.Status(), Detail: detail, ChallengeID: challengeID}
}

// Error is a protocol failure and the problem type it is answered with.
// Detail is safe to show the client: it never contains credential bytes.
type Error struct {
	Type   ProblemType
	Detail string
	Err    error // the cause, if any; may carry parser text, not secrets
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("mpp: %s: %v", e.Detail, e.Err)
	}
	return "mpp: " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// Problem renders the error for a response about challenge id.
func (e *Error) Problem(challengeID string) Problem {
	return NewProblem(e.Type, e.Detail, challengeID)
}

// ProblemOf returns the problem type of err, or "" when err is not a
// protocol error (ErrMultipleCredentials is none: it is a plain 400).
func ProblemOf(err error) ProblemType {
	if errors.Is(err, ErrNoCredential) {
		return ProblemPaymentRequired
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Type
	}
	return ""
}

// ErrMultipleCredentials: a request carried more than one Payment
// credential. The draft answers it with 400 and no challenge, so it is not
// an *Error with a 402 problem type.
var ErrMultipleCredentials = errors.New("mpp: more than one Payment credential")

// ErrNoCredential: the request carried no Payment credential; answer with
// the challenges (payment-required).
var ErrNoCredential = errors.New("mpp: no Payment credential")

func malformed(detail string, err error) *Error {
	return &Error{Type: ProblemMalformedCredential, Detail: detail, Err: err}
}

func invalidChallenge(detail string, err error) *Error {
	return &Error{Type: ProblemInvalidChallenge, Detail: detail, Err: err}
}
