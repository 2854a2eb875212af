package passkeys

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
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
	{"Send at", []string{"sendAt", "send_at"}},
	{"Agent", []string{"agent_name", "agent", "agentName"}},
	{"Agent id", []string{"agent_id", "agentId"}},
	{"On host", []string{"host_name", "host", "hostName"}},
	{"Host id", []string{"host_id", "hostId"}},
	{"Document", []string{"document_id", "documentId"}},
	{"Document type", []string{"document_type", "sourceType"}},
	{"Document size", []string{"document_bytes", "bytes"}},
	{"Document SHA-256", []string{"document_sha256", "documentSha256", "sha256"}},
	{"Cover page", []string{"cover"}},
	{"Cover to", []string{"coverRecipient", "cover_recipient"}},
	{"Cover subject", []string{"coverSubject", "cover_subject"}},
	{"Cover text", []string{"cover_text", "coverText"}},
	{"Header line", []string{"header"}},
	{"Resolution", []string{"resolution"}},
	{"Retries", []string{"retry"}},
	{"Request id", []string{"send_id", "sendId"}},
}

// faxSendFacts reads a fax_send approval's details: the known facts in
// faxSendOrder, then anything else core put there, so that nothing asked
// is hidden. mode is whose credits pay when the details do not say (core
// runs every agent in Config.AgentMode).
func faxSendFacts(raw json.RawMessage, mode core.Mode) (*faxSendView, []fact) {
	var m map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return &faxSendView{Mode: string(mode), BuyCredits: buyCreditsPath(string(mode))}, facts(raw)
	}
	// The document is an object in core's details: its members become
	// facts of their own.
	if doc, ok := m["document"].(map[string]any); ok {
		delete(m, "document")
		for k, v := range map[string]string{"id": "document_id", "sha256": "document_sha256", "sourceType": "document_type", "bytes": "document_bytes"} {
			if x, ok := doc[k]; ok {
				m[v] = x
				delete(doc, k)
			}
		}
		for k, x := range doc {
			m["document_"+k] = x
		}
	}
	if _, ok := m["mode"]; !ok && mode != "" {
		m["mode"] = string(mode)
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
			if f.label == "Document size" {
				if n, ok := val.(float64); ok {
					s = humanBytes(int64(n))
				}
			}
			if f.label == "Price" && v.Currency != "" {
				s = strings.TrimPrefix(s, "$") + " " + strings.ToUpper(v.Currency)
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
func insufficientCredits(a *approvals.Approval, mode core.Mode, err error) error {
	e := core.AsError(err)
	if a == nil || a.Kind != approvals.KindFaxSend || e.Code != credits.CodeInsufficientCredits {
		return err
	}
	fs, _ := faxSendFacts(a.Details, mode)
	out := *e
	out.Message = strings.TrimRight(e.Message, ".") + ". Add credits, then approve again: the request waits until it expires."
	return out.With("buy_credits_url", fs.BuyCredits)
}

// humanBytes is a size as people read it.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
