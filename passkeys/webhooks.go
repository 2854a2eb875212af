package passkeys

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/webhooks"
)

// The owner's webhook endpoints, per mode: list, create (the secret shown
// on the answer's page only), enable and disable, delete, rotate the
// secret, send a test event, and each endpoint's delivery log with a
// redeliver button. Every decision is core/webhooks'; these pages show
// and forward, and work without JavaScript.

type webhooksBody struct {
	Mode      core.Mode
	Endpoints []webhooks.Endpoint
	// Secret is a secret just created or rotated, shown in this answer
	// only; SecretFor names its endpoint.
	Secret, SecretFor string
	// Types are the event types a filter can name.
	Types []events.Type
	// PublicKey is faxhub's v1a key (whpk_…); KeyURL where it is served.
	PublicKey, KeyURL string
	Max               int
	// Form keeps what a refused creation asked for.
	Form webhooks.CreateRequest
}

func (c *Console) webhooksPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	c.showWebhooks(w, r, s, http.StatusOK, webhooksBody{}, "", "")
}

func (c *Console) showWebhooks(w http.ResponseWriter, r *http.Request, s *signedIn, status int, b webhooksBody, notice, errMsg string) {
	mode, err := queryMode(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	list, err := c.svc.Webhooks.List(r.Context(), core.OwnerPrincipal(s.owner.ID, mode))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	b.Mode, b.Endpoints, b.Types, b.Max = mode, list, events.Types(), webhooks.MaxEndpoints
	if k, err := c.svc.Webhooks.SigningKey(r.Context()); err == nil {
		b.PublicKey = k.Key
	} else {
		c.log.ErrorContext(r.Context(), "webhook signing key", "err", err)
	}
	if u, err := c.url("rest.getWebhookSigningKey"); err == nil {
		b.KeyURL = u
	}
	if notice == "" {
		notice = noticeOf(r.URL.Query().Get("done"))
	}
	d := c.page(s, "Webhooks", "webhooks", b)
	d.Notice, d.Error = notice, errMsg
	c.render(w, r, status, "webhooks", d)
}

// noticeOf is the notice a redirect after an action asks for.
func noticeOf(done string) string {
	switch done {
	case "enabled":
		return "The endpoint is enabled: new events are sent to it. Redeliver what it missed from its delivery log."
	case "disabled":
		return "The endpoint is disabled: nothing is sent to it until you enable it."
	case "deleted":
		return "The endpoint is deleted."
	case "test":
		return "A webhook.test event is on its way; its attempt appears below within seconds (reload the page)."
	case "redeliver":
		return "The event is on its way again, with the same webhook-id; its attempts appear below."
	}
	return ""
}

// createWebhook answers with the page itself, not a redirect: the secret
// is shown in this one response and stored only sealed.
func (c *Console) createWebhook(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode, err := queryMode(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the form could not be read"))
		return
	}
	req := webhooks.CreateRequest{
		URL: strings.TrimSpace(r.PostForm.Get("url")), Description: strings.TrimSpace(r.PostForm.Get("description")),
		EventTypes: r.PostForm["eventTypes"],
	}
	switch r.PostForm.Get("signing") {
	case "v1a":
		req.Signing = []string{"v1a"}
	case "both":
		req.Signing = []string{"v1", "v1a"}
	}
	e, err := c.svc.Webhooks.Create(r.Context(), core.OwnerPrincipal(s.owner.ID, mode), req)
	if err != nil {
		if ce := core.AsError(err); ce.Kind != core.KindInternal {
			c.showWebhooks(w, r, s, statusOf(ce.Kind), webhooksBody{Form: req}, "", ce.Message)
			return
		}
		c.fail(w, r, err)
		return
	}
	c.showWebhooks(w, r, s, http.StatusOK, webhooksBody{Secret: e.Secret, SecretFor: e.URL}, "", "")
}

// rotateWebhook shows the new secret on the list page, like a creation.
func (c *Console) rotateWebhook(w http.ResponseWriter, r *http.Request, s *signedIn) {
	e, err := c.ownerWebhook(r, s)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	rotated, err := c.svc.Webhooks.RotateSecret(r.Context(), core.OwnerPrincipal(s.owner.ID, e.Mode), e.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	q.Set("mode", string(e.Mode))
	r.URL.RawQuery = q.Encode()
	c.showWebhooks(w, r, s, http.StatusOK, webhooksBody{Secret: rotated.Secret, SecretFor: rotated.URL},
		"The endpoint has a new secret. Until "+humanTime(rotated.PreviousSecretUntil)+" every delivery is signed with the old one too: switch your receiver before then.", "")
}

// ownerWebhook finds one of the owner's endpoints in the mode the link
// names, or in either mode.
func (c *Console) ownerWebhook(r *http.Request, s *signedIn) (*webhooks.Endpoint, error) {
	return inOwnerModes(r, s, c.svc.Webhooks.Get)
}

func webhooksPath(mode core.Mode, done string) string {
	return "/console/webhooks?mode=" + string(mode) + "&done=" + url.QueryEscape(done)
}

func webhookPath(e *webhooks.Endpoint, done string) string {
	p := "/console/webhooks/" + url.PathEscape(e.ID) + "?mode=" + string(e.Mode)
	if done != "" {
		p += "&done=" + url.QueryEscape(done)
	}
	return p
}

// setWebhookEnabled turns an endpoint on or off.
func (c *Console) setWebhookEnabled(on bool) ownerHandler {
	return func(w http.ResponseWriter, r *http.Request, s *signedIn) {
		e, err := c.ownerWebhook(r, s)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if _, err := c.svc.Webhooks.Update(r.Context(), core.OwnerPrincipal(s.owner.ID, e.Mode), e.ID, webhooks.UpdateRequest{Enabled: &on}); err != nil {
			c.fail(w, r, err)
			return
		}
		done := "disabled"
		if on {
			done = "enabled"
		}
		to := webhooksPath(e.Mode, done)
		if r.PostFormValue("back") == "endpoint" {
			to = webhookPath(e, done)
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
	}
}

// deleteWebhook needs the confirmation box ticked.
func (c *Console) deleteWebhook(w http.ResponseWriter, r *http.Request, s *signedIn) {
	if r.PostFormValue("confirm") != "yes" {
		c.fail(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "tick the box to confirm that you want to delete this endpoint"))
		return
	}
	e, err := c.ownerWebhook(r, s)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if err := c.svc.Webhooks.Delete(r.Context(), core.OwnerPrincipal(s.owner.ID, e.Mode), e.ID); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, webhooksPath(e.Mode, "deleted"), http.StatusSeeOther)
}

func (c *Console) testWebhook(w http.ResponseWriter, r *http.Request, s *signedIn) {
	e, err := c.ownerWebhook(r, s)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if _, err := c.svc.Webhooks.SendTest(r.Context(), core.OwnerPrincipal(s.owner.ID, e.Mode), e.ID); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, webhookPath(e, "test"), http.StatusSeeOther)
}

func (c *Console) redeliverWebhook(w http.ResponseWriter, r *http.Request, s *signedIn) {
	e, err := c.ownerWebhook(r, s)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if _, err := c.svc.Webhooks.Redeliver(r.Context(), core.OwnerPrincipal(s.owner.ID, e.Mode), e.ID, strings.TrimSpace(r.PostFormValue("eventId"))); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, webhookPath(e, "redeliver"), http.StatusSeeOther)
}

type webhookBody struct {
	Endpoint   *webhooks.Endpoint
	Deliveries []webhooks.Delivery
	// Next is the cursor of the next page of the log.
	Next string
	// Status filters the log.
	Status string
	// DisableAfter says when a failing endpoint is disabled, in words.
	DisableAfter string
}

// webhookPage is an endpoint and its delivery log, 50 deliveries a page.
func (c *Console) webhookPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	e, err := c.ownerWebhook(r, s)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	status := q.Get("status")
	page, err := c.svc.Webhooks.Deliveries(r.Context(), core.OwnerPrincipal(s.owner.ID, e.Mode), e.ID, webhooks.DeliveryStatus(status), q.Get("after"), 50)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	b := webhookBody{Endpoint: e, Deliveries: page.Data, Next: page.Next, Status: status, DisableAfter: durationWords(c.svc.Webhooks.Config().DisableAfter.Hours())}
	d := c.page(s, "Webhook endpoint", "webhooks", b)
	d.Notice = noticeOf(q.Get("done"))
	c.render(w, r, http.StatusOK, "webhook", d)
}

// durationWords writes hours as a person would: "3 days", "36 hours".
func durationWords(h float64) string {
	if h >= 48 && int(h)%24 == 0 {
		return strconv.Itoa(int(h)/24) + " days"
	}
	return strconv.Itoa(int(h)) + " hours"
}
