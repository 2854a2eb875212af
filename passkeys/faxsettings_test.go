package passkeys_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

// The owner sees and changes their fax settings on one page: the same rule
// as PUT /api/v1/fax-settings, CSRF-protected; a refused value is shown
// again beside the field core names, and nothing is saved.
func TestFaxSettingsPage(t *testing.T) {
	h := newHarness(t)
	b, _ := h.signUp("ada@example.com", "Ada")
	owner := h.ownerID("ada@example.com")
	settings := func() faxes.Settings {
		t.Helper()
		st, err := h.env.Svc.Faxes.GetSettings(t.Context(), core.OwnerPrincipal(owner, core.ModeTest))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	r := b.get("/console/fax-settings")
	wantStatus(t, "page", r, http.StatusOK)
	for _, want := range []string{
		`action="/console/fax-settings"`, `name="csrf"`, `<label for="fs-timezone">`, `list="fs-zones"`,
		`<datalist id="fs-zones">`, `value="America/New_York"`, `<label for="fs-header">`, `name="sender.name"`,
		`name="sender.company"`, `name="sender.phone"`, `name="sender.fax"`, `aria-current="page">Fax settings`,
		`<label class="choice"><input id="fs-approve-chat" name="approveChatSends" type="checkbox" aria-describedby="fs-approve-chat-help">`,
		" UTC   " + "+1 212-555-0100   Page 1/3",
	} {
		if !strings.Contains(html.UnescapeString(r.body), want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(r.body, "<script>") || strings.Contains(r.body, "style=") {
		t.Error("the page has inline script or style")
	}
	if !strings.Contains(b.get("/console").body, `href="/console/fax-settings"`) {
		t.Error("the dashboard does not link to the fax settings")
	}

	csrf := b.csrf()
	good := url.Values{"csrf": {csrf}, "timeZone": {"America/New_York"}, "header": {" ACME Legal "},
		"sender.name": {"Ada Lovelace"}, "sender.company": {"ACME"}, "sender.phone": {"+1 212 555 0100"}, "sender.fax": {"+1 212 555 0101"}}
	r = b.form("/console/fax-settings", good)
	wantStatus(t, "save", r, http.StatusSeeOther)
	if loc := r.header.Get("Location"); loc != "/console/fax-settings?saved=1" {
		t.Fatalf("after saving: %q", loc)
	}
	want := faxes.Settings{TimeZone: "America/New_York", Header: "ACME Legal",
		Sender: faxes.Sender{Name: "Ada Lovelace", Company: "ACME", Phone: "+1 212 555 0100", Fax: "+1 212 555 0101"}}
	if got := settings(); got != want {
		t.Fatalf("saved %+v, want %+v", got, want)
	}
	// The chat-app box: ticked it is saved and shown ticked; a save
	// without it turns it off (only here: an API key keeps it on).
	chat := url.Values{"csrf": {csrf}, "approveChatSends": {"on"}}
	wantStatus(t, "tick approve chat sends", b.form("/console/fax-settings", chat), http.StatusSeeOther)
	if !settings().ApproveChatSends {
		t.Fatal("the ticked box was not saved")
	}
	if r := b.get("/console/fax-settings"); !strings.Contains(r.body, `name="approveChatSends" type="checkbox" checked`) {
		t.Fatal("the saved box is not shown ticked")
	}
	wantStatus(t, "save", b.form("/console/fax-settings", good), http.StatusSeeOther)
	if settings().ApproveChatSends {
		t.Fatal("unticking the box in the console did not turn it off")
	}
	r = b.get("/console/fax-settings?saved=1")
	for _, want := range []string{"Fax settings saved", `value="America/New_York"`, `value="ACME Legal"`, `value="Ada Lovelace"`, "ACME Legal   +1 212-555-0100"} {
		if !strings.Contains(html.UnescapeString(r.body), want) {
			t.Errorf("saved page lacks %s", want)
		}
	}
	if !strings.Contains(r.body, " EST   ") && !strings.Contains(r.body, " EDT   ") {
		t.Error("the header example is not in the saved time zone")
	}

	for _, tc := range []struct {
		name, field, value, id, msg string
	}{
		{"unknown zone", "timeZone", "Mars/Olympus", "fs-timezone", "is not an IANA time zone"},
		{"Local", "timeZone", "Local", "fs-timezone", "is not an IANA time zone"},
		{"long header", "header", strings.Repeat("x", faxes.MaxHeader+1), "fs-header", "header is longer than 50 characters"},
		{"emoji header", "header", "ACME 🙂", "fs-header", "a character the fax font cannot draw"},
		{"control character", "sender.company", "AC\x07ME", "fs-sender-company", "sender.company holds a control character"},
		{"long sender", "sender.fax", strings.Repeat("1", faxes.MaxCoverField+1), "fs-sender-fax", "sender.fax is longer than 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := url.Values{}
			for k, vs := range good {
				v[k] = vs
			}
			v.Set("header", "Changed")
			v.Set(tc.field, tc.value)
			r := b.form("/console/fax-settings", v)
			wantStatus(t, tc.name, r, http.StatusBadRequest)
			body := html.UnescapeString(r.body)
			if !strings.Contains(body, `<p class="field-error" id="`+tc.id+`-error">`) || !strings.Contains(body, tc.msg) {
				t.Fatalf("no message beside %s:\n%s", tc.id, r.body)
			}
			if !strings.Contains(body, `aria-describedby="`+tc.id+`-error`) || strings.Count(body, `aria-invalid="true"`) != 1 {
				t.Errorf("%s is not the one field marked invalid", tc.id)
			}
			if !strings.Contains(body, "Nothing was saved") {
				t.Error("the page does not say nothing was saved")
			}
			if tc.field == "timeZone" && !strings.Contains(body, `value="`+tc.value+`"`) {
				t.Error("the refused value is not shown again")
			}
			if got := settings(); got != want {
				t.Fatalf("a refused form changed the settings: %+v", got)
			}
		})
	}

	// Empty fields clear the settings (UTC, no header, no sender).
	r = b.form("/console/fax-settings", url.Values{"csrf": {csrf}})
	wantStatus(t, "clear", r, http.StatusSeeOther)
	if got := settings(); got != (faxes.Settings{}) {
		t.Fatalf("cleared settings %+v", got)
	}

	// The form token is required, and a signed-out browser is sent to sign in.
	wantStatus(t, "no csrf", b.form("/console/fax-settings", url.Values{"header": {"Forged"}}), http.StatusForbidden)
	wantStatus(t, "forged csrf", b.form("/console/fax-settings", url.Values{"csrf": {"forged"}, "header": {"Forged"}}), http.StatusForbidden)
	anon := h.browser()
	r = anon.get("/console/fax-settings")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/signin?next=%2Fconsole%2Ffax-settings" {
		t.Fatalf("signed out: %d %q", r.status, r.header.Get("Location"))
	}
	wantStatus(t, "signed-out post", anon.form("/console/fax-settings", url.Values{"csrf": {csrf}, "header": {"Forged"}}), http.StatusUnauthorized)
	if got := settings(); got != (faxes.Settings{}) {
		t.Fatalf("a refused post changed the settings: %+v", got)
	}
}

// Settings are the owner's own: another owner's page shows none of them,
// and saving there changes only that owner's.
func TestFaxSettingsAreOwners(t *testing.T) {
	h := newHarness(t)
	alice, _ := h.signUp("alice@example.com", "Alice")
	bob, _ := h.signUp("bob@example.com", "Bob")
	r := alice.form("/console/fax-settings", url.Values{"csrf": {alice.csrf()}, "header": {"Alice Secret Header"}})
	wantStatus(t, "alice saves", r, http.StatusSeeOther)
	if r := bob.get("/console/fax-settings"); strings.Contains(r.body, "Alice Secret Header") {
		t.Fatal("bob sees alice's header")
	}
	wantStatus(t, "bob saves", bob.form("/console/fax-settings", url.Values{"csrf": {bob.csrf()}, "header": {"Bob"}}), http.StatusSeeOther)
	st, err := h.env.Svc.Faxes.GetSettings(t.Context(), core.OwnerPrincipal(h.ownerID("alice@example.com"), core.ModeLive))
	if err != nil || st.Header != "Alice Secret Header" {
		t.Fatalf("alice's settings %+v %v", st, err)
	}
}
