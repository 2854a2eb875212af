package approvals

import (
	"encoding/json"
	"time"

	"github.com/faxhub/faxhub/core"
)

// Kind names what an owner is asked to decide.
type Kind string

const (
	KindOAuthConsent   Kind = "oauth_consent"
	KindAgentClaim     Kind = "agent_claim"
	KindDevice         Kind = "device_authorization"
	KindVerifiedAction Kind = "verified_action"
)

// Status is where an approval stands.
type Status string

const (
	Pending  Status = "pending"
	Approved Status = "approved"
	Declined Status = "declined"
	Expired  Status = "expired"
)

// Approval is a pending owner decision. BindingHash commits to the exact
// thing approved: a decision on a different hash is refused.
type Approval struct {
	ID      string `json:"id" db:"id"`
	OwnerID string `json:"-" db:"owner_id"`
	// Mode is the mode the requester acts in: its approval events are in
	// that mode's log.
	Mode        core.Mode       `json:"mode" db:"mode"`
	Kind        Kind            `json:"kind" db:"kind"`
	Requester   string          `json:"requester" db:"requester"`
	Summary     string          `json:"summary" db:"summary"`
	Details     json.RawMessage `json:"details" db:"details"`
	BindingHash string          `json:"bindingHash" db:"binding_hash"`
	RequiresUV  bool            `json:"requiresUserVerification" db:"requires_uv"`
	Status      Status          `json:"status" db:"status"`
	Decision    json.RawMessage `json:"decision,omitempty" db:"decision"`
	CreatedAt   time.Time       `json:"createdAt" db:"created_at"`
	ExpiresAt   time.Time       `json:"expiresAt" db:"expires_at"`
	DecidedAt   *time.Time      `json:"decidedAt,omitempty" db:"decided_at"`
}

// KindCreditPurchase asks the owner to approve one AP2 charge; it
// always requires user verification.
const KindCreditPurchase Kind = "credit_purchase"

// ConsentDetails is what an oauth_consent approval asks the owner
// (Approval.Details); the console renders it and the OAuth server reads it
// back.
type ConsentDetails struct {
	ClientID    string   `json:"clientId"`
	ClientName  string   `json:"clientName"`
	ClientURI   string   `json:"clientUri,omitempty"`
	LogoURI     string   `json:"logoUri,omitempty"`
	RedirectURI string   `json:"redirectUri"`
	Scopes      []string `json:"scopes"`
	Resource    string   `json:"resource"`
}

// ConsentDecision is what the owner granted (Approval.Decision): the
// scopes, never more than were asked.
type ConsentDecision struct {
	Scopes []string `json:"scopes"`
}
