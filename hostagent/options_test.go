package hostagent_test

import (
	"html"
	"net/http"
	"strings"
	"testing"
	"time"
)

// send_fax takes the send options (snake_case): the pending answer and the
// owner's approval page show them, the fax created on approval keeps them
// (scheduled until send_at); one approved after its send_at goes at once;
// each mistake is a 400 naming the field.
func TestSendFaxOptions(t *testing.T) {
	e, w, ag := sendEnv(t)
	sendAt := e.clock.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	args := func(extra map[string]any) map[string]any {
		a := map[string]any{"to": "+14155550123", "content_base64": inlinePDF()}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	all := map[string]any{
		"cover_page": map[string]any{"recipient_name": "Dr. Ada", "recipient_company": "Clinic", "subject": "Referral", "message": "Two pages."},
		"header":     "Acme Clinic",
		"resolution": "fine",
		"send_at":    sendAt.Format(time.RFC3339),
		"retry":      map[string]any{"attempts": 3, "delay_minutes": 15},
	}
	check := func(what string, v map[string]any) {
		t.Helper()
		cp, _ := v["cover_page"].(map[string]any)
		rt, _ := v["retry"].(map[string]any)
		if cp == nil || cp["recipient_name"] != "Dr. Ada" || cp["subject"] != "Referral" || v["header"] != "Acme Clinic" || v["resolution"] != "fine" ||
			v["send_at"] != sendAt.Format(time.RFC3339) || rt == nil || rt["attempts"] != float64(3) || rt["delay_minutes"] != float64(15) {
			t.Fatalf("%s does not show the options: %v", what, v)
		}
	}
	r := ag.execute("send_fax", args(all))
	if r.status != http.StatusAccepted {
		t.Fatalf("send_fax: %d %s", r.status, r.raw)
	}
	send, _ := r.body["send"].(map[string]any)
	check("the pending send", send)
	if send["cover"] != true {
		t.Fatalf("a cover_page is a cover page: %v", send)
	}
	// The owner's approval page says what the options change.
	page := w.Do(t, http.MethodGet, r.str("approval_url"), nil, "", nil)
	body := html.UnescapeString(page.Body)
	for _, want := range []string{"Referral", "Dr. Ada, Clinic", "Acme Clinic", "fine", sendAt.Format(time.RFC3339), "3 calls in all, 15 minutes apart"} {
		if !strings.Contains(body, want) {
			t.Errorf("the approval page lacks %q", want)
		}
	}
	if res := w.Approve(t, r.str("approval_id"), true); res.Status != 200 {
		t.Fatalf("approve: %d %s", res.Status, res.Body)
	}
	st := ag.sendStatus(t, r.str("status_url"))
	data, _ := st.body["data"].(map[string]any)
	if st.str("status") != "sent" || data == nil || data["status"] != "scheduled" {
		t.Fatalf("sent: %s", st.raw)
	}
	check("the fax", data)
	fx := ag.execute("get_fax_status", map[string]any{"fax_id": data["fax_id"]})
	check("get_fax_status", fx.body["data"].(map[string]any))

	// Approved after its send_at: the fax goes at once.
	late := ag.execute("send_fax", args(map[string]any{"send_at": e.clock.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)}))
	if late.status != http.StatusAccepted {
		t.Fatalf("send_fax: %d %s", late.status, late.raw)
	}
	e.clock.Advance(11 * time.Minute)
	if res := w.Approve(t, late.str("approval_id"), true); res.Status != 200 {
		t.Fatalf("approve late: %d %s", res.Status, res.Body)
	}
	st = ag.sendStatus(t, late.str("status_url"))
	if d, _ := st.body["data"].(map[string]any); d == nil || d["status"] != "queued" {
		t.Fatalf("approved after send_at: %s", st.raw)
	}

	for _, c := range []struct {
		name  string
		extra map[string]any
		code  string
		field string
	}{
		{"a past send_at", map[string]any{"send_at": e.clock.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, "invalid_request", "send_at"},
		{"a malformed send_at", map[string]any{"send_at": "soon"}, "invalid_request", "send_at"},
		{"a 51-character header", map[string]any{"header": strings.Repeat("h", 51)}, "invalid_request", "header"},
		{"retry.attempts 6", map[string]any{"retry": map[string]any{"attempts": 6, "delay_minutes": 5}}, "invalid_request", "retry.attempts"},
		{"an unknown cover_page field", map[string]any{"cover_page": map[string]any{"fax_number": "1"}}, "invalid_request", "cover_page.fax_number"},
		{"an undrawable subject", map[string]any{"cover_page": map[string]any{"subject": "漢"}}, "undrawable_character", "cover_page.subject"},
		{"retry.delay_minutes 0", map[string]any{"retry": map[string]any{"attempts": 2, "delay_minutes": 0}}, "invalid_request", "retry.delay_minutes"},
	} {
		r := ag.execute("send_fax", args(c.extra))
		wantError(t, c.name, r, http.StatusBadRequest, c.code)
		if r.str("field") != c.field {
			t.Errorf("%s: field %q, want %q: %s", c.name, r.str("field"), c.field, r.raw)
		}
	}
}
