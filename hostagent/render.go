package hostagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/inbox"
)

// Hostagent shows a fax and a quote exactly as the other agent doors do —
// core's one presentation (faxes.View, core.Quote) — but in its own API
// family's casing: the agent-auth endpoints under /api/auth are snake_case
// (docs/design.md), so faxId is fax_id here. Renaming the keys of the one
// view, instead of keeping a snake_case copy of it, means a member core
// adds reaches delegated agents too and the doors cannot drift apart.

// snakeCase is v's JSON with every object key, nested ones included, in
// snake_case. Numbers keep their exact text (no float64 round trip).
func snakeCase(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("hostagent: render %T: %w", v, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("hostagent: render %T as an object: %w", v, err)
	}
	return snakeKeys(m).(map[string]any), nil
}

func snakeKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[snakeName(k)] = snakeKeys(x)
		}
		return out
	case []any:
		for i := range t {
			t[i] = snakeKeys(t[i])
		}
		return t
	}
	return v
}

// snakeName is a camelCase JSON name in snake_case: pagesSent → pages_sent.
// The views' names have no acronyms in capitals (checkoutUrl, not
// checkoutURL), so one underscore before each capital is the whole rule.
func snakeName(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// faxData is the fax as get_fax_status and a sent send_fax's status show
// it.
func faxData(f *faxes.Fax) (map[string]any, error) {
	out, err := snakeCase(faxes.PresentFax(f))
	if err != nil {
		return nil, err
	}
	// Hostagent has always sent failure_reason beside failure_code, even
	// empty (docs/hostagent.md); the view omits an empty reason.
	if f.FailureCode != "" {
		out["failure_reason"] = f.FailureReason
	}
	return out, nil
}

// inboxItemData is a received fax as list_inbox shows it: inbox.ItemView
// in snake_case. text_status has always been sent, even empty.
func inboxItemData(f *inbox.InboundFax) (map[string]any, error) {
	out, err := snakeCase(inbox.PresentItem(f))
	if err != nil {
		return nil, err
	}
	out["text_status"] = string(f.TextStatus)
	return out, nil
}

// inboxFaxData is a received fax as read_inbox_fax shows it: inbox.FaxView
// in snake_case, with text_status, text_method and text_note always
// present, as before.
func inboxFaxData(f *inbox.InboundFax, link *inbox.Link) (map[string]any, error) {
	out, err := snakeCase(inbox.PresentFax(f, link))
	if err != nil {
		return nil, err
	}
	out["text_status"], out["text_method"], out["text_note"] = string(f.TextStatus), f.TextMethod, f.ReadingNote()
	return out, nil
}
