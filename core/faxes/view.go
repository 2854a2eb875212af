package faxes

import (
	"github.com/faxhub/faxhub/core"
)

// View is how the agent doors (MCP tools, A2A skills and task artifacts,
// the delegated agent's capabilities) show a fax: one presentation, so a
// field added here reaches every agent at once and no door can drift. It
// is the union of what the doors showed before it existed, under the
// names the agent docs and suites use. REST keeps its own contract shape
// (the Fax itself, OpenAPI), which differs on purpose (attemptCount,
// priceCents, the full latest attempt).
//
// The JSON tags are camelCase, the MCP and A2A family's casing; hostagent
// renders the same View with its keys in snake_case (docs/design.md: one
// casing per API family). The jsonschema tags describe fields in the MCP
// tools' output schemas, which the SDK infers from this type.
type View struct {
	FaxID         string       `json:"faxId"`
	Status        string       `json:"status" jsonschema:"scheduled, queued, sending, delivered, partial, failed or canceled"`
	To            string       `json:"to"`
	From          string       `json:"from,omitempty" jsonschema:"the sender number, when one was chosen"`
	Pages         int          `json:"pages"`
	PagesSent     int          `json:"pagesSent"`
	Price         string       `json:"price"`
	Currency      string       `json:"currency"`
	PaymentMethod string       `json:"paymentMethod"`
	DraftID       string       `json:"draftId,omitempty"`
	Attempts      int          `json:"attempts"`
	FailureCode   string       `json:"failureCode,omitempty"`
	FailureReason string       `json:"failureReason,omitempty"`
	CreatedAt     string       `json:"createdAt"`
	CompletedAt   string       `json:"completedAt,omitempty"`
	LatestAttempt *AttemptView `json:"latestAttempt,omitempty" jsonschema:"the latest delivery attempt, when the fax has one"`
	BatchID       string       `json:"batchId,omitempty" jsonschema:"the broadcast the fax is one recipient of"`
	FaxedSHA256   string       `json:"faxedSha256,omitempty" jsonschema:"hex SHA-256 of the document as faxed (cover page and header line included), once the first attempt composed it; the receipt attests it"`
	FaxedPages    int          `json:"faxedPages,omitempty" jsonschema:"pages of the document as faxed, the cover page included"`
	SentBy        *SentBy      `json:"sentBy,omitempty" jsonschema:"the door the fax came in by: kind (api_key, oauth_grant, agent_registration, delegated_agent, machine_payer, owner_session; unknown for faxes older than the record), the credential's id and the name the owner knows it by"`
	// AlreadyPaid is set by the door that sent the fax (MCP send_fax) when
	// the draft had been paid before: nothing new was charged. Never set
	// by Present.
	AlreadyPaid bool `json:"alreadyPaid,omitempty" jsonschema:"send_fax only: the draft had been paid before; nothing new was charged"`
}

// AttemptView is a delivery attempt as agents see it: no provider or
// provider reference (those are faxhub's business, shown to the owner
// through REST only).
type AttemptView struct {
	Number        int    `json:"number"`
	Status        string `json:"status"`
	PagesSent     int    `json:"pagesSent"`
	FailureCode   string `json:"failureCode,omitempty"`
	FailureReason string `json:"failureReason,omitempty"`
	StartedAt     string `json:"startedAt"`
	FinishedAt    string `json:"finishedAt,omitempty"`
}

// Present is f as the agent doors show it. Times are RFC 3339 in UTC, to
// the second.
func Present(f *Fax) View {
	v := View{
		FaxID: f.ID, Status: string(f.Status), To: f.To, From: f.From, Pages: f.Pages, PagesSent: f.PagesSent, Price: f.Price,
		Currency: f.Currency, PaymentMethod: string(f.PaymentMethod), Attempts: f.Attempts,
		FailureCode: f.FailureCode, FailureReason: f.FailureReason, CreatedAt: core.RFC3339(f.CreatedAt),
	}
	if f.DraftID != nil {
		v.DraftID = *f.DraftID
	}
	if f.CompletedAt != nil {
		v.CompletedAt = core.RFC3339(*f.CompletedAt)
	}
	if a := f.LatestAttempt; a != nil {
		v.LatestAttempt = &AttemptView{Number: a.Number, Status: string(a.Status), PagesSent: a.PagesSent,
			FailureCode: a.FailureCode, FailureReason: a.FailureReason, StartedAt: core.RFC3339(a.StartedAt)}
		if a.FinishedAt != nil {
			v.LatestAttempt.FinishedAt = core.RFC3339(*a.FinishedAt)
		}
	}
	v.FaxedSHA256, v.FaxedPages = f.FaxedSHA256, f.FaxedPages
	if f.SentBy.Kind != "" { // every stored fax has one ("unknown" at worst)
		sb := f.SentBy
		v.SentBy = &sb
	}
	if f.BatchID != nil {
		v.BatchID = *f.BatchID
	}
	return v
}

// DraftPresentation is a draft as the agent doors show it: what was
// drafted, its quote (core.Quote, whose JSON is already the agents'
// shape) and the page where the owner pays for exactly this fax.
// (DraftView is the domain's draft-with-quote; this is its presentation.)
type DraftPresentation struct {
	DraftID     string     `json:"draftId"`
	Mode        string     `json:"mode"`
	Status      string     `json:"status"`
	To          string     `json:"to"`
	From        string     `json:"from,omitempty" jsonschema:"the sender number, when one was chosen"`
	Pages       int        `json:"pages"`
	Cover       bool       `json:"cover"`
	Quote       core.Quote `json:"quote"`
	CheckoutURL string     `json:"checkoutUrl" jsonschema:"page where the signed-in owner reviews and pays for exactly this fax"`
	ExpiresAt   string     `json:"expiresAt"`
}

// PresentDraft is d as the agent doors show it. checkoutURL is the draft's
// hosted checkout page; the caller has it (tasks.Service.DraftCheckoutURL,
// or a task view's CheckoutURL), and building URLs is not this package's.
func PresentDraft(d *DraftView, checkoutURL string) DraftPresentation {
	return DraftPresentation{
		DraftID: d.ID, Mode: string(d.Mode), Status: string(d.Status), To: d.To, From: d.From, Pages: d.Pages, Cover: d.Cover,
		Quote: d.Quote, CheckoutURL: checkoutURL, ExpiresAt: core.RFC3339(d.ExpiresAt),
	}
}

// rfc3339 is the one time format of the agent views: RFC 3339, UTC, whole
// seconds (the stored times carry sub-second precision agents do not need).
