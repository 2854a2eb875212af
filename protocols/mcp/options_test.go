package mcp_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/testenv"
)

// optionsFax is a fax or draft as the tools show it, with its options.
type optionsFax struct {
	FaxID, DraftID, Status, Header, Resolution, SendAt string
	Cover                                              bool
	CoverPage                                          *struct{ RecipientName, Subject, Message, SenderName string }
	Retry                                              *struct{ Attempts, DelayMinutes int }
	Quote                                              struct{ Cover bool }
}

// TestSendOptions: create_fax_draft takes every send option; the draft,
// the fax send_fax makes of it and get_fax_status show them; a scheduled
// fax is canceled through cancel_fax and its hold released; each mistake
// is a tool error (isError) with core's code and the field, never a
// protocol error.
func TestSendOptions(t *testing.T) {
	clk := testenv.NewClockAt(time.Now().Truncate(time.Second))
	e := newEnv(t, func(o *app.Options) {
		base := o.Core
		o.Core = func(c *services.Config) {
			if base != nil {
				base(c)
			}
			c.Now = clk.Now
		}
	})
	o := e.owner("options@example.com")
	cs := e.connect(o.Token(t, allScopes, e.base+"/mcp"))
	if _, err := e.a.Svc.Credits.Grant(t.Context(), o.Account.ID, core.ModeTest, 10*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	var up uploadOut
	mustOK(t, "create_upload", call(t, cs, "create_upload", map[string]any{}, &up))
	req, _ := http.NewRequest(http.MethodPut, up.UploadURL, bytes.NewReader(testenv.MinimalPDF(1)))
	req.Header.Set("Content-Type", "application/pdf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	sendAt := clk.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	args := func(extra map[string]any) map[string]any {
		a := map[string]any{"to": "+12125550100", "uploadToken": up.UploadToken}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	all := map[string]any{
		"coverPage":  map[string]any{"recipientName": "Dr. Ada", "subject": "Lab results", "message": "Two pages follow.\nCall me.", "senderName": "Grace"},
		"header":     "Acme Clinic",
		"resolution": "fine",
		"sendAt":     sendAt,
		"retry":      map[string]any{"attempts": 4, "delayMinutes": 7},
	}
	var d optionsFax
	mustOK(t, "create_fax_draft", call(t, cs, "create_fax_draft", args(all), &d))
	check := func(what string, f optionsFax) {
		t.Helper()
		if f.CoverPage == nil || f.CoverPage.RecipientName != "Dr. Ada" || f.CoverPage.Subject != "Lab results" || f.CoverPage.SenderName != "Grace" ||
			!strings.Contains(f.CoverPage.Message, "Call me") || f.Header != "Acme Clinic" || f.Resolution != "fine" || f.SendAt != sendAt ||
			f.Retry == nil || f.Retry.Attempts != 4 || f.Retry.DelayMinutes != 7 {
			t.Fatalf("%s does not show the options: %+v (cover %+v, retry %+v)", what, f, f.CoverPage, f.Retry)
		}
	}
	check("the draft", d)
	if !d.Quote.Cover {
		t.Fatalf("a coverPage is priced as a cover page: %+v", d)
	}
	var f optionsFax
	mustOK(t, "send_fax", call(t, cs, "send_fax", map[string]any{"draftId": d.DraftID}, &f))
	check("the sent fax", f)
	if f.Status != "scheduled" {
		t.Fatalf("a fax with sendAt ahead is %q, want scheduled", f.Status)
	}
	var g optionsFax
	mustOK(t, "get_fax_status", call(t, cs, "get_fax_status", map[string]any{"faxId": f.FaxID}, &g))
	check("get_fax_status", g)
	var lf struct{ Faxes []optionsFax }
	mustOK(t, "list_faxes", call(t, cs, "list_faxes", map[string]any{"status": "scheduled"}, &lf))
	if len(lf.Faxes) != 1 || lf.Faxes[0].FaxID != f.FaxID {
		t.Fatalf("list_faxes scheduled = %+v", lf)
	}
	check("list_faxes", lf.Faxes[0])

	// The scheduled fax's price is held; cancel_fax releases it.
	var cr struct{ Held string }
	mustOK(t, "get_credits", call(t, cs, "get_credits", map[string]any{}, &cr))
	if cr.Held == "0.00" {
		t.Fatalf("a scheduled fax holds its price: %+v", cr)
	}
	var c optionsFax
	mustOK(t, "cancel_fax", call(t, cs, "cancel_fax", map[string]any{"faxId": f.FaxID}, &c))
	if c.Status != "canceled" {
		t.Fatalf("cancel_fax = %+v", c)
	}
	mustOK(t, "get_credits", call(t, cs, "get_credits", map[string]any{}, &cr))
	if cr.Held != "0.00" {
		t.Fatalf("cancel released nothing: %+v", cr)
	}
	wantErr(t, "cancel twice", call(t, cs, "cancel_fax", map[string]any{"faxId": f.FaxID}, nil), "fax_not_cancelable")

	// The legacy cover and coverText still work, beside the new fields.
	var legacy optionsFax
	mustOK(t, "create_fax_draft", call(t, cs, "create_fax_draft", args(map[string]any{"cover": true, "coverText": "hello"}), &legacy))
	if legacy.CoverPage == nil || legacy.CoverPage.Message != "hello" || legacy.Resolution != "standard" || legacy.SendAt != "" {
		t.Fatalf("legacy cover = %+v %+v", legacy, legacy.CoverPage)
	}

	// Each mistake: a tool error naming the field, with core's code.
	for _, c := range []struct {
		name  string
		extra map[string]any
		want  []string
	}{
		{"a past sendAt", map[string]any{"sendAt": clk.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, []string{"invalid_request", "field: sendAt", "past"}},
		{"sendAt past 30 days", map[string]any{"sendAt": clk.Now().Add(31 * 24 * time.Hour).UTC().Format(time.RFC3339)}, []string{"invalid_request", "field: sendAt"}},
		{"a malformed sendAt", map[string]any{"sendAt": "tomorrow"}, []string{"invalid_request", "field: sendAt"}},
		{"a 51-character header", map[string]any{"header": strings.Repeat("h", 51)}, []string{"invalid_request", "field: header", "50"}},
		{"retry.attempts 6", map[string]any{"retry": map[string]any{"attempts": 6, "delayMinutes": 5}}, []string{"invalid_request", "field: retry.attempts"}},
		{"retry.delayMinutes 31", map[string]any{"retry": map[string]any{"attempts": 2, "delayMinutes": 31}}, []string{"invalid_request", "field: retry.delayMinutes"}},
		{"a resolution", map[string]any{"resolution": "ultra"}, []string{"invalid_request", "field: resolution"}},
		{"an unknown coverPage field", map[string]any{"coverPage": map[string]any{"subject": "x", "faxNumber": "1"}}, []string{"invalid_request", "field: coverPage.faxNumber"}},
		{"an unknown argument", map[string]any{"priority": "high"}, []string{"invalid_request", "field: priority"}},
		{"a wrong type", map[string]any{"retry": map[string]any{"attempts": "three", "delayMinutes": 5}}, []string{"invalid_request", "field: retry.attempts"}},
		{"an undrawable subject", map[string]any{"coverPage": map[string]any{"subject": "漢"}}, []string{"undrawable_character", "field: coverPage.subject"}},
		{"coverText and coverPage.message", map[string]any{"cover": true, "coverText": "a", "coverPage": map[string]any{"message": "b"}}, []string{"invalid_request", "field: coverText"}},
	} {
		msg := call(t, cs, "create_fax_draft", args(c.extra), nil)
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q, want it to contain %q", c.name, msg, w)
			}
		}
	}
}
