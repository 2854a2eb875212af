package passkeys_test

import (
	"bytes"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// sendingAgent is an active agent of a new host of the owner granted
// send_fax, with its principal.
func (h *harness) sendingAgent(b *browser, owner string) (*hosts.Host, *hosts.Agent, core.Principal) {
	h.t.Helper()
	host := h.keyedHost(b, owner, "Sender host", hosts.CapSendFax, hosts.CapValidateFax)
	v := h.registerDelegated(host, "Sender", hosts.CapSendFax, hosts.CapValidateFax)
	a, err := h.env.Svc.Hosts.DelegatedAgentForJWT(h.t.Context(), host, v.Agent.ID)
	if err != nil {
		h.t.Fatalf("agent not active: %v (%s)", err, v.Agent.Status)
	}
	return host, a, h.env.Svc.Hosts.Principal(host, a, nil)
}

// upload stores a one-page PDF for the owner in mode.
func (h *harness) upload(owner string, mode core.Mode) *documents.Document {
	h.t.Helper()
	ctx := h.t.Context()
	pdf := testenv.MinimalPDF(1)
	up, err := h.env.Svc.Documents.CreateUpload(ctx, core.OwnerPrincipal(owner, mode), "application/pdf", int64(len(pdf)))
	if err != nil {
		h.t.Fatal(err)
	}
	doc, err := h.env.Svc.Documents.ReceiveUpload(ctx, up.UploadToken, bytes.NewReader(pdf))
	if err != nil {
		h.t.Fatal(err)
	}
	return doc
}

func (h *harness) requestSend(p core.Principal, a *hosts.Agent, doc *documents.Document) (*hosts.Send, *approvals.Approval) {
	h.t.Helper()
	ds, err := h.env.Svc.Hosts.RequestSend(h.t.Context(), p, a, hosts.SendRequest{To: "+14155550123", DocumentID: doc.ID})
	if err != nil {
		h.t.Fatal(err)
	}
	apr, err := h.env.Svc.Approvals.Get(h.t.Context(), p.OwnerID, ds.ApprovalID)
	if err != nil {
		h.t.Fatal(err)
	}
	return ds, apr
}

func TestFaxSendApproval(t *testing.T) {
	h := newHostsHarness(t, testenv.WithConfig(func(c *services.Config) { c.AgentMode = core.ModeTest }))
	ada, dev := h.signUp("ada@example.com", "Ada")
	owner := h.ownerID("ada@example.com")
	_, agent, p := h.sendingAgent(ada, owner)
	doc := h.upload(owner, p.Mode)
	ds, apr := h.requestSend(p, agent, doc)
	if apr.Kind != approvals.KindFaxSend || !apr.RequiresUV {
		t.Fatalf("approval %s uv=%v", apr.Kind, apr.RequiresUV)
	}
	csrf := ada.csrf()

	// The inbox shows exactly the fax, with the passkey button only.
	r := ada.get("/console/approvals")
	body := html.UnescapeString(r.body)
	for _, want := range []string{"Fax to send", "needs your passkey", "<dt>Destination</dt><dd>+14155550123</dd>", "<dt>Agent</dt><dd>Sender</dd>", "<dt>On host</dt><dd>Sender host</dd>",
		"<dt>Document</dt><dd>" + doc.ID + "</dd>", "<dt>Document SHA-256</dt><dd>" + doc.SHA256 + "</dd>", "USD from your test credits", "Approve with passkey", "add credits"} {
		if !strings.Contains(body, want) {
			t.Errorf("inbox lacks %q", want)
		}
	}
	if strings.Contains(body, `name="decision" value="approve"`) {
		t.Error("a fax_send approval offers a form approve")
	}
	// A form approval is refused.
	r = ada.form("/console/approvals/"+apr.ID, url.Values{"csrf": {csrf}, "decision": {"approve"}, "binding": {apr.BindingHash}})
	wantStatus(t, "form approve", r, http.StatusForbidden)
	begin, finish := approvalPaths(apr.ID)

	// No user verification: refused, nothing sent.
	dev.Auth.Options.UserNotVerified = true
	assertion, _ := ada.assertion(dev, begin, map[string]any{"binding": apr.BindingHash}, csrf)
	wantCode(t, "no UV", ada.postJSON(finish, map[string]any{"credential": assertion}, csrf), http.StatusForbidden, approvals.CodeUserVerification)
	dev.Auth.Options.UserNotVerified = false

	// With UV but no credits: 402 with the way to add them; still pending.
	assertion, _ = ada.assertion(dev, begin, map[string]any{"binding": apr.BindingHash}, csrf)
	r = ada.postJSON(finish, map[string]any{"credential": assertion}, csrf)
	wantCode(t, "no credits", r, http.StatusPaymentRequired, credits.CodeInsufficientCredits)
	if u, _ := r.json(t)["buy_credits_url"].(string); !strings.HasPrefix(u, "/console?mode="+string(p.Mode)) {
		t.Fatalf("no link to add credits: %s", r.body)
	}
	if h.status(owner, apr.ID) != approvals.Pending {
		t.Fatal("a refused payment decided the approval")
	}

	// With credits: approved, the fax exists.
	if _, err := h.env.Svc.Credits.Grant(t.Context(), owner, p.Mode, 10*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	assertion, _ = ada.assertion(dev, begin, map[string]any{"binding": apr.BindingHash}, csrf)
	wantStatus(t, "approve with passkey", ada.postJSON(finish, map[string]any{"credential": assertion}, csrf), http.StatusOK)
	got, fax, err := h.env.Svc.Hosts.GetSend(t.Context(), p, agent, ds.ID)
	if err != nil || got.Status != hosts.SendSent || fax == nil || got.FaxID == nil {
		t.Fatalf("send %+v fax %+v err %v", got, fax, err)
	}
	if f, err := h.env.Svc.Faxes.Get(t.Context(), core.OwnerPrincipal(owner, p.Mode), *got.FaxID); err != nil || f.To != "+14155550123" || f.DocumentID != doc.ID {
		t.Fatalf("fax %+v %v", f, err)
	}
	// Replaying the assertion sends nothing more.
	r = ada.postJSON(finish, map[string]any{"credential": assertion}, csrf)
	if r.status < 400 {
		t.Fatalf("replayed approval: %d", r.status)
	}
	page, err := h.env.Svc.Faxes.List(t.Context(), core.OwnerPrincipal(owner, p.Mode), faxes.ListRequest{Limit: 10})
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("faxes after replay: %d %v", len(page.Data), err)
	}

	// Another request, declined by form: nothing sent.
	ds2, apr2 := h.requestSend(p, agent, doc)
	wantStatus(t, "decline", ada.form("/console/approvals/"+apr2.ID, url.Values{"csrf": {csrf}, "decision": {"decline"}, "binding": {apr2.BindingHash}}), http.StatusSeeOther)
	got, fax, err = h.env.Svc.Hosts.GetSend(t.Context(), p, agent, ds2.ID)
	if err != nil || got.Status != hosts.SendDeclined || fax != nil || got.FaxID != nil {
		t.Fatalf("declined send %+v fax %+v err %v", got, fax, err)
	}
	if page, _ := h.env.Svc.Faxes.List(t.Context(), core.OwnerPrincipal(owner, p.Mode), faxes.ListRequest{Limit: 10}); len(page.Data) != 1 {
		t.Fatalf("a declined send created a fax: %d faxes", len(page.Data))
	}
}
