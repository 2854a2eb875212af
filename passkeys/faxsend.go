package passkeys

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/faxhub/faxhub/core"
)

// A delegated agent's send_fax in the approval inbox: the exact fax
// (destination, pages, price, agent and host, document) the owner approves
// with a passkey; core creates and pays the fax in the approval's
// transaction.

// faxSendView is what the inbox says about paying for the fax.
type faxSendView struct {
	Mode     string // test or live: whose credits pay
	Price    string
	Currency string
	// BuyCredits is where to add credits of that mode.
	BuyCredits string
}

// faxSendFact is one fact of a fax_send approval and the detail keys it
// may be stored under.
type faxSendFact struct {
	label string
	keys  []string
}

// faxSendOrder puts what the owner must check first: where, how much, who
// asks, what document.
var faxSendOrder = []faxSendFact{
	{"Destination", []string{"to", "to_number", "destination"}},
	{"Country", []string{"country"}},
	{"Pages", []string{"pages"}},
	{"Price", []string{"price"}},
	{"Agent", []string{"agent_name", "agent", "agentName"}},
	{"Agent id", []string{"agent_id", "agentId"}},
	{"On host", []string{"host_name", "host", "hostName"}},
	{"Host id", []string{"host_id", "hostId"}},
	{"Document", []string{"document_id", "documentId", "document"}},
	{"Document SHA-256", []string{"document_sha256", "documentSha256", "sha256"}},
	{"Cover page", []string{"cover"}},
	{"Cover text", []string{"cover_text", "coverText"}},
}

// faxSendFacts reads a fax_send approval's details: the known facts in
// faxSendOrder, then anything else core put there, so that nothing asked
// is hidden.
func faxSendFacts(raw json.RawMessage) (*faxSendView, []fact) {
	var m map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return &faxSendView{BuyCredits: buyCreditsPath("")}, facts(raw)
	}
	str := func(k string) string {
		if v, ok := m[k]; ok && v != nil {
			return humanValue(v)
		}
		return ""
	}
	v := &faxSendView{Mode: str("mode"), Price: str("price"), Currency: strings.ToUpper(str("currency"))}
	v.BuyCredits = buyCreditsPath(v.Mode)
	used := map[string]bool{"mode": true, "currency": true}
	var out []fact
	for _, f := range faxSendOrder {
		for _, k := range f.keys {
			val, ok := m[k]
			if !ok {
				continue
			}
			used[k] = true
			s := humanValue(val)
			if f.label == "Price" && v.Currency != "" {
				s += " " + v.Currency
				if v.Mode != "" {
					s += " from your " + v.Mode + " credits"
				}
			}
			out = append(out, fact{Label: f.label, Value: s})
			break
		}
	}
	var rest []string
	for k := range m {
		if !used[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		out = append(out, fact{Label: humanKey(k), Value: humanValue(m[k])})
	}
	return v, out
}

// buyCreditsPath is the dashboard of the mode whose credits pay.
func buyCreditsPath(mode string) string {
	if mode == string(core.ModeLive) {
		return "/console?mode=live#credits-h"
	}
	return "/console?mode=test#credits-h"
}

// insufficientCredits makes the 402 of a fax_send approval that the
// balance does not cover say what to do, with the link to add credits.
func insufficientCredits(a *core.Approval, err error) error {
	e := core.AsError(err)
	if a == nil || a.Kind != core.ApprovalFaxSend || e.Code != core.CodeInsufficientCredits {
		return err
	}
	fs, _ := faxSendFacts(a.Details)
	out := *e
	out.Message = strings.TrimRight(e.Message, ".") + ". Add credits, then approve again: the request waits until it expires."
	return out.With("buy_credits_url", fs.BuyCredits)
}
