package a2a_test

import (
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

// TestFaxOptions: create_fax takes every send option through a2a-go's
// client; the draft artifact shows them; once paid the fax is scheduled
// (the task WORKING, its fax with sendAt) and CancelTask cancels it; each
// mistake is invalid params naming the field; the card's schema states
// the bounds.
func TestFaxOptions(t *testing.T) {
	e := newEnv(t)
	w := e.owner("options@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	tok := upload(t, c, 1)
	sendAt := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	args := func(extra map[string]any) map[string]any {
		a := map[string]any{"to": "+12125550100", "uploadToken": tok}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	res, err := c.SendMessage(t.Context(), skillMsg("create_fax", args(map[string]any{
		"coverPage":  map[string]any{"recipientName": "Dr. Ada", "subject": "Referral", "message": "See attached."},
		"header":     "Acme Clinic",
		"resolution": "fine",
		"sendAt":     sendAt,
		"retry":      map[string]any{"attempts": 5, "delayMinutes": 30},
	})))
	task := asTask(t, res, err)
	check := func(what string, v map[string]any) {
		t.Helper()
		cp, _ := v["coverPage"].(map[string]any)
		rt, _ := v["retry"].(map[string]any)
		if cp == nil || cp["recipientName"] != "Dr. Ada" || cp["subject"] != "Referral" || v["header"] != "Acme Clinic" || v["resolution"] != "fine" ||
			v["sendAt"] != sendAt || rt == nil || rt["attempts"] != float64(5) || rt["delayMinutes"] != float64(30) {
			t.Fatalf("%s does not show the options: %v", what, v)
		}
	}
	draft := artifactData(task, "fax-draft")
	check("the fax-draft artifact", draft)
	if draft["cover"] != true || draft["quote"].(map[string]any)["billedPages"] != float64(2) {
		t.Fatalf("a coverPage is priced as a cover page: %v", draft)
	}

	pay(t, w, draft["checkoutUrl"].(string))
	got := getTask(t, c, task.ID)
	text, data := statusData(t, got)
	if got.Status.State != a2a.TaskStateWorking || data["status"] != string(faxes.Scheduled) || !strings.Contains(text, "scheduled") || !strings.Contains(text, sendAt) {
		t.Fatalf("paid scheduled task: %s %q %v", got.Status.State, text, data)
	}
	check("the scheduled fax", data)
	fax := call(t, c, skillMsg("get_fax", map[string]any{"faxId": data["faxId"]}))
	check("get_fax", fax)
	list := call(t, c, skillMsg("list_faxes", map[string]any{"status": "scheduled"}))
	if fx, _ := list["faxes"].([]any); len(fx) != 1 {
		t.Fatalf("list_faxes scheduled = %v", list)
	}
	// The door: an A2A fax is paid at the draft's checkout; its maker is
	// the agent's OAuth grant.
	if sb, _ := fax["sentBy"].(map[string]any); sb["kind"] != string(core.PrincipalOAuthGrant) || sb["id"] == "" {
		t.Errorf("get_fax sentBy = %v", fax["sentBy"])
	}
	// By period: today has it, a day long gone does not; a bad bound is
	// refused with the period's code.
	today := time.Now().UTC().Format(time.DateOnly)
	for args, want := range map[[2]string]int{{today, today}: 1, {"2001-01-01", "2001-01-02"}: 0} {
		l := call(t, c, skillMsg("list_faxes", map[string]any{"createdFrom": args[0], "createdTo": args[1]}))
		if fx, _ := l["faxes"].([]any); len(fx) != want {
			t.Errorf("list_faxes from %s to %s: %d faxes, want %d", args[0], args[1], len(fx), want)
		}
	}
	if _, err := c.SendMessage(t.Context(), skillMsg("list_faxes", map[string]any{"createdFrom": "yesterday"})); err == nil || !strings.Contains(err.Error(), "created_from") {
		t.Errorf("list_faxes with a bad createdFrom: %v", err)
	}
	canceled, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask of a scheduled fax: %v %+v", err, canceled)
	}

	for _, c2 := range []struct {
		name  string
		extra map[string]any
		field string
	}{
		{"a past sendAt", map[string]any{"sendAt": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, "sendAt"},
		{"a malformed sendAt", map[string]any{"sendAt": "next week"}, "sendAt"},
		{"a 51-character header", map[string]any{"header": strings.Repeat("x", 51)}, "header"},
		{"retry.attempts 6", map[string]any{"retry": map[string]any{"attempts": 6, "delayMinutes": 1}}, "retry.attempts"},
		{"a resolution", map[string]any{"resolution": "high"}, "resolution"},
		{"an unknown coverPage field", map[string]any{"coverPage": map[string]any{"faxNumber": "1"}}, "coverPage.faxNumber"},
		{"an undrawable subject", map[string]any{"coverPage": map[string]any{"subject": "漢"}}, "coverPage.subject"},
	} {
		_, err := c.SendMessage(t.Context(), skillMsg("create_fax", args(c2.extra)))
		if d := a2aErr(t, c2.name, err, a2a.ErrInvalidParams, c2.field); d["field"] != c2.field {
			t.Errorf("%s: details %v, want field %s", c2.name, d, c2.field)
		}
	}
}

// The card's create_fax schema carries the options with core's bounds.
func TestCardOptionsSchema(t *testing.T) {
	e := newEnv(t)
	card, err := e.a.A2A.Card()
	if err != nil {
		t.Fatal(err)
	}
	var schemas map[string]any
	for _, x := range card.Capabilities.Extensions {
		if s, ok := x.Params["schemas"].(map[string]any); ok {
			schemas = s
		}
	}
	cf, _ := schemas["create_fax"].(map[string]any)
	props, _ := cf["properties"].(map[string]any)
	header, _ := props["header"].(map[string]any)
	retry, _ := props["retry"].(map[string]any)
	at, _ := props["sendAt"].(map[string]any)
	if header["maxLength"] != faxes.MaxHeader || retry == nil || at["format"] != "date-time" || props["coverPage"] == nil || props["resolution"] == nil {
		t.Fatalf("create_fax schema %v", cf)
	}
	for _, s := range card.Skills {
		if s.ID == "create_fax" && !strings.Contains(s.Description, "sendAt") {
			t.Fatalf("create_fax description %q", s.Description)
		}
	}
}
