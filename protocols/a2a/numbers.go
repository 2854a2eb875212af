package a2a

import (
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
)

// Results of the number and inbox skills, in the JSON docs/a2a.md shows:
// the same shapes as the MCP tools'. Received faxes are given as text and
// a short-lived download link, never the document.
type (
	availableNumberOut struct {
		Number       string `json:"number"`
		Country      string `json:"country"`
		Region       string `json:"region,omitempty"`
		Locality     string `json:"locality,omitempty"`
		MonthlyPrice string `json:"monthlyPrice"`
		MonthlyCents int64  `json:"monthlyCents"`
		Currency     string `json:"currency"`
	}
	numberOut struct {
		ID            string `json:"id"`
		Number        string `json:"number"`
		Mode          string `json:"mode"`
		Status        string `json:"status"`
		Country       string `json:"country"`
		Region        string `json:"region,omitempty"`
		Locality      string `json:"locality,omitempty"`
		MonthlyPrice  string `json:"monthlyPrice"`
		MonthlyCents  int64  `json:"monthlyCents"`
		Currency      string `json:"currency"`
		CheckoutURL   string `json:"checkoutUrl,omitempty"`
		ReservedUntil string `json:"reservedUntil,omitempty"`
		PaidThrough   string `json:"paidThrough,omitempty"`
		FailureCode   string `json:"failureCode,omitempty"`
		FailureReason string `json:"failureReason,omitempty"`
		CreatedAt     string `json:"createdAt"`
		ActivatedAt   string `json:"activatedAt,omitempty"`
	}
	inboxItemOut struct {
		ID            string `json:"id"`
		NumberID      string `json:"numberId"`
		From          string `json:"from"`
		To            string `json:"to"`
		Pages         int    `json:"pages"`
		Status        string `json:"status"`
		TextStatus    string `json:"textStatus,omitempty"`
		TextPreview   string `json:"textPreview,omitempty"`
		FailureReason string `json:"failureReason,omitempty"`
		ReceivedAt    string `json:"receivedAt"`
	}
	inboxFaxOut struct {
		inboxItemOut
		Text              string `json:"text"`
		TextMethod        string `json:"textMethod,omitempty"`
		TextNote          string `json:"textNote,omitempty"`
		DownloadURL       string `json:"downloadUrl,omitempty"`
		DownloadExpiresAt string `json:"downloadExpiresAt,omitempty"`
	}
)

func availableView(found []numbers.AvailableNumber) map[string]any {
	out := make([]availableNumberOut, 0, len(found))
	for _, n := range found {
		out = append(out, availableNumberOut{Number: n.E164, Country: n.Country, Region: n.Region, Locality: n.Locality,
			MonthlyPrice: n.MonthlyPrice, MonthlyCents: n.MonthlyCents, Currency: n.Currency})
	}
	return map[string]any{"numbers": out}
}

func numberView(n *numbers.Number) numberOut {
	o := numberOut{
		ID: n.ID, Number: n.E164, Mode: string(n.Mode), Status: string(n.Status), Country: n.Country, Region: n.Region, Locality: n.Locality,
		MonthlyPrice: n.MonthlyPrice, MonthlyCents: n.MonthlyCents, Currency: n.Currency, CheckoutURL: n.CheckoutURL,
		FailureCode: n.FailureCode, FailureReason: n.FailureReason, CreatedAt: rfc3339(n.CreatedAt),
	}
	if n.Status == numbers.AwaitingPayment && n.ReservedUntil != nil {
		o.ReservedUntil = rfc3339(*n.ReservedUntil)
	}
	if n.PaidThrough != nil {
		o.PaidThrough = rfc3339(*n.PaidThrough)
	}
	if n.ActivatedAt != nil {
		o.ActivatedAt = rfc3339(*n.ActivatedAt)
	}
	return o
}

func inboxItem(f *inbox.InboundFax) inboxItemOut {
	return inboxItemOut{
		ID: f.ID, NumberID: f.NumberID, From: f.From, To: f.To, Pages: f.Pages, Status: string(f.Status), TextStatus: string(f.TextStatus),
		TextPreview: f.TextPreview, FailureReason: f.FailureReason, ReceivedAt: rfc3339(f.ReceivedAt),
	}
}
