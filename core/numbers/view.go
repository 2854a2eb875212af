package numbers

import "github.com/faxhub/faxhub/core"

// View is how the agent doors (MCP tools, A2A skills and task artifacts)
// show one of the owner's numbers: one presentation, so no door can drift.
// REST keeps its contract shape (the Number itself, OpenAPI). The
// jsonschema tags describe fields in the MCP tools' output schemas, which
// the SDK infers from this type. (Numbers found by Search are shown as
// AvailableNumber, whose JSON is already the agents' shape.)
type View struct {
	ID            string `json:"id" jsonschema:"the number's id (num_…)"`
	Number        string `json:"number" jsonschema:"the number in E.164"`
	Mode          string `json:"mode"`
	Status        string `json:"status" jsonschema:"awaiting_payment, pending, active, past_due, failed, canceled or released"`
	Country       string `json:"country"`
	Region        string `json:"region,omitempty"`
	Locality      string `json:"locality,omitempty"`
	MonthlyPrice  string `json:"monthlyPrice" jsonschema:"USD per month, decimal"`
	MonthlyCents  int64  `json:"monthlyCents"`
	Currency      string `json:"currency"`
	CheckoutURL   string `json:"checkoutUrl,omitempty" jsonschema:"awaiting_payment only: give this page to the owner, who pays the first month there"`
	ReservedUntil string `json:"reservedUntil,omitempty" jsonschema:"awaiting_payment only: the reservation lapses at this RFC 3339 time"`
	PaidThrough   string `json:"paidThrough,omitempty" jsonschema:"the end of the month paid for"`
	FailureCode   string `json:"failureCode,omitempty"`
	FailureReason string `json:"failureReason,omitempty"`
	CreatedAt     string `json:"createdAt"`
	ActivatedAt   string `json:"activatedAt,omitempty"`
}

// Present is n as the agent doors show it. Times are RFC 3339 in UTC, to
// the second. reservedUntil is shown only while the number awaits payment:
// after that the stored reservation is history, and an agent reading it
// would think the number could still lapse.
func Present(n *Number) View {
	v := View{
		ID: n.ID, Number: n.E164, Mode: string(n.Mode), Status: string(n.Status), Country: n.Country, Region: n.Region, Locality: n.Locality,
		MonthlyPrice: n.MonthlyPrice, MonthlyCents: n.MonthlyCents, Currency: n.Currency, CheckoutURL: n.CheckoutURL,
		FailureCode: n.FailureCode, FailureReason: n.FailureReason, CreatedAt: core.RFC3339(n.CreatedAt),
	}
	if n.Status == AwaitingPayment && n.ReservedUntil != nil {
		v.ReservedUntil = core.RFC3339(*n.ReservedUntil)
	}
	if n.PaidThrough != nil {
		v.PaidThrough = core.RFC3339(*n.PaidThrough)
	}
	if n.ActivatedAt != nil {
		v.ActivatedAt = core.RFC3339(*n.ActivatedAt)
	}
	return v
}

// rfc3339 is the one time format of the agent views: RFC 3339, UTC, whole
// seconds.
