package faxes_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// The period filter: from inclusive, to exclusive, a date alone the whole
// day in UTC; a bad bound or an empty period is invalid_period naming the
// field; it combines with the status filter and the cursor.
func TestListFaxesByPeriod(t *testing.T) {
	e, clk := testenv.Clocked(t, testenv.WithConfig(func(c *services.Config) { c.SetLimit(core.LimitSend, core.Rate{Burst: 100}) }))
	p := e.Principal(t, e.KeyATest)
	tok := e.Upload(t, p, 1)
	// Two faxes on 1 November (12:00, 18:00), two on the 2nd (00:00, 12:00).
	var ids []string
	for i, step := range []time.Duration{0, 6 * time.Hour, 6 * time.Hour, 12 * time.Hour} {
		clk.Advance(step)
		f, _, err := e.Svc.Faxes.Send(ctx, p, fmt.Sprint("period", i), faxes.SendRequest{To: "+12125550100", UploadToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.ID)
	}
	list := func(r faxes.ListRequest) []string {
		t.Helper()
		page, err := e.Svc.Faxes.List(ctx, p, r)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		var got []string
		for _, f := range page.Data {
			got = append(got, f.ID)
		}
		return got
	}
	for _, c := range []struct {
		name string
		r    faxes.ListRequest
		want []string
	}{
		{"the first day", faxes.ListRequest{CreatedFrom: "2026-11-01", CreatedTo: "2026-11-01"}, []string{ids[1], ids[0]}},
		{"from the second day", faxes.ListRequest{CreatedFrom: "2026-11-02"}, []string{ids[3], ids[2]}},
		{"an instant: from inclusive", faxes.ListRequest{CreatedFrom: "2026-11-01T18:00:00Z"}, []string{ids[3], ids[2], ids[1]}},
		{"an instant: to exclusive", faxes.ListRequest{CreatedTo: "2026-11-02T00:00:00Z"}, []string{ids[1], ids[0]}},
		{"another offset", faxes.ListRequest{CreatedFrom: "2026-11-02T01:00:00+01:00", CreatedTo: "2026-11-02T01:00:01+01:00"}, []string{ids[2]}},
		{"no fax", faxes.ListRequest{CreatedTo: "2026-10-31"}, nil},
		{"with the cursor", faxes.ListRequest{CreatedFrom: "2026-11-01", StartingAfter: ids[2]}, []string{ids[1], ids[0]}},
	} {
		if got := list(c.r); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := e.Svc.Faxes.Cancel(ctx, p, ids[3]); err != nil {
		t.Fatal(err)
	}
	if got := list(faxes.ListRequest{Status: "canceled", CreatedFrom: "2026-11-02"}); fmt.Sprint(got) != fmt.Sprint([]string{ids[3]}) {
		t.Errorf("status and period: %v", got)
	}
	// A page of the period stops at the limit and says there is more.
	page, err := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{CreatedFrom: "2026-11-01", Limit: 3})
	if err != nil || len(page.Data) != 3 || !page.HasMore || page.Next != ids[1] {
		t.Fatalf("limited page: %v %+v", err, page)
	}
	for _, bad := range []faxes.ListRequest{
		{CreatedFrom: "yesterday"},
		{CreatedTo: "2026-13-01"},
		{CreatedFrom: "1999-12-31"},
		{CreatedFrom: strings.Repeat("2", 41)},
		{CreatedFrom: "2026-11-02", CreatedTo: "2026-11-01"},
		{CreatedFrom: "2026-11-02T00:00:00Z", CreatedTo: "2026-11-02T00:00:00Z"},
	} {
		_, err := e.Svc.Faxes.List(ctx, p, bad)
		testenv.WantCode(t, err, faxes.CodeInvalidPeriod)
		if core.ErrorKind(err) != core.KindInvalid {
			t.Errorf("%+v: kind %v", bad, core.ErrorKind(err))
		}
	}
}

// Every way a fax is made records the door it came in by: a send and a
// resend by API key (the key's id and name), a batch, the owner in the
// console, a draft paid with credits (the payer's door) and a draft paid
// at its checkout (the door of whoever made the draft). The JSON shows
// it as sentBy, with no secret.
func TestSentBy(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.SetLimit(core.LimitSend, core.Rate{Burst: 100}) }))
	key := e.Principal(t, e.KeyATest)
	wantKey := faxes.SentBy{Kind: core.PrincipalAPIKey, ID: key.SubjectID, Name: "test"}
	check := func(what string, f *faxes.Fax, want faxes.SentBy) {
		t.Helper()
		stored, err := e.Svc.Faxes.Get(ctx, key, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		if f.SentBy != want || stored.SentBy != want {
			t.Errorf("%s: answered %+v, stored %+v, want %+v", what, f.SentBy, stored.SentBy, want)
		}
	}
	f, _, err := e.Svc.Faxes.Send(ctx, key, "s1", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, key, 1)})
	if err != nil {
		t.Fatal(err)
	}
	check("send", f, wantKey)
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`"sentBy":{"kind":"api_key","id":%q,"name":"test"}`, key.SubjectID); !strings.Contains(string(b), want) {
		t.Errorf("JSON %s lacks %s", b, want)
	}
	if strings.Contains(string(b), e.KeyATest) {
		t.Error("the fax's JSON holds the API key's secret")
	}

	owner := core.OwnerPrincipal(key.OwnerID, core.ModeTest)
	r, _, err := e.Svc.Faxes.Resend(ctx, owner, "r1", f.ID, faxes.ResendRequest{})
	if err != nil {
		t.Fatal(err)
	}
	check("resend in the console", r, faxes.SentBy{Kind: core.PrincipalOwnerSession})

	bt, _, err := e.Svc.Faxes.SendBatch(ctx, key, "b1", faxes.BatchRequest{UploadToken: e.Upload(t, key, 1), Recipients: recipients("+12125550100")})
	if err != nil {
		t.Fatal(err)
	}
	bf, err := e.Svc.Faxes.Get(ctx, key, bt.Faxes[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	check("batch", bf, wantKey)

	app := e.Svc.Kernel.GrantPrincipal(core.GrantAccess{OwnerID: key.OwnerID, GrantID: "grant_1", ClientID: "client_1",
		ClientName: "Claude", Scopes: core.FaxScopes()})
	app.Mode = core.ModeTest
	wantApp := faxes.SentBy{Kind: core.PrincipalOAuthGrant, ID: "grant_1", Name: "Claude"}
	d := newDraft(t, e, app, 1)
	df, _, err := e.Svc.Faxes.SendDraft(ctx, key, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("draft paid with the key's credits", df, wantKey)

	d2 := newDraft(t, e, app, 1)
	cs, err := e.Svc.Checkout.StartDraft(ctx, app, d2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
		t.Fatal(err)
	}
	paid, err := e.Svc.Faxes.GetDraft(ctx, key, d2.ID)
	if err != nil || paid.FaxID == nil {
		t.Fatalf("draft after checkout: %v %+v", err, paid)
	}
	cf, err := e.Svc.Faxes.Get(ctx, key, *paid.FaxID)
	if err != nil {
		t.Fatal(err)
	}
	check("draft paid at checkout", cf, wantApp)
}
