package rest

import (
	"net/http"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/core/webhooks"
)

// Owner webhooks: endpoints (create, list, get, update, delete, rotate the
// secret), each endpoint's delivery log, a redelivery and a test event;
// and faxhub's public v1a key, which receivers fetch without credentials.
// Every decision is core/webhooks'; the routes are an API key's (core
// refuses agents' tokens: webhooks are the account's settings).

func (a *api) webhookRoutes() []route {
	key := web.AuthAPIKey
	const one = "/api/v1/webhook-endpoints/{id}"
	return []route{
		{"createWebhookEndpoint", "POST", "/api/v1/webhook-endpoints", key, a.authed(a.createWebhookEndpoint)},
		{"listWebhookEndpoints", "GET", "/api/v1/webhook-endpoints", key, a.authed(a.listWebhookEndpoints)},
		{"getWebhookEndpoint", "GET", one, key, a.authed(a.getWebhookEndpoint)},
		{"updateWebhookEndpoint", "PATCH", one, key, a.authed(a.updateWebhookEndpoint)},
		{"deleteWebhookEndpoint", "DELETE", one, key, a.authed(a.deleteWebhookEndpoint)},
		{"rotateWebhookSecret", "POST", one + "/rotate-secret", key, a.authed(a.rotateWebhookSecret)},
		{"listWebhookDeliveries", "GET", one + "/deliveries", key, a.authed(a.listWebhookDeliveries)},
		{"redeliverWebhookEvent", "POST", one + "/redeliver", key, a.authed(a.redeliverWebhookEvent)},
		{"testWebhookEndpoint", "POST", one + "/test", key, a.authed(a.testWebhookEndpoint)},
		{"getWebhookSigningKey", "GET", "/api/v1/webhooks/signing-key", web.AuthNone, a.public(a.webhookSigningKey)},
	}
}

func (a *api) createWebhookEndpoint(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	var body webhooks.CreateRequest
	if err := web.DecodeJSON(w, r, &body, false); err != nil {
		return err
	}
	e, err := a.svc.Webhooks.Create(r.Context(), p, body)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, e)
	return nil
}

func (a *api) listWebhookEndpoints(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	if _, err := strictQuery(r); err != nil {
		return err
	}
	list, err := a.svc.Webhooks.List(r.Context(), p)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, listData[webhooks.Endpoint]{Data: list})
	return nil
}

func (a *api) getWebhookEndpoint(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	e, err := a.svc.Webhooks.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, e)
	return nil
}

func (a *api) updateWebhookEndpoint(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	var body webhooks.UpdateRequest
	if err := web.DecodeJSON(w, r, &body, false); err != nil {
		return err
	}
	e, err := a.svc.Webhooks.Update(r.Context(), p, r.PathValue("id"), body)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, e)
	return nil
}

// deletedEndpoint answers a deletion.
type deletedEndpoint struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

func (a *api) deleteWebhookEndpoint(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	id := r.PathValue("id")
	if err := a.svc.Webhooks.Delete(r.Context(), p, id); err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, deletedEndpoint{ID: id, Deleted: true})
	return nil
}

func (a *api) rotateWebhookSecret(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	if err := web.DecodeJSON(w, r, &struct{}{}, true); err != nil {
		return err
	}
	e, err := a.svc.Webhooks.RotateSecret(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, e)
	return nil
}

func (a *api) listWebhookDeliveries(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	q, limit, err := listQuery(r, "status")
	if err != nil {
		return err
	}
	page, err := a.svc.Webhooks.Deliveries(r.Context(), p, r.PathValue("id"), webhooks.DeliveryStatus(q.Get("status")), q.Get("starting_after"), limit)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, page)
	return nil
}

func (a *api) redeliverWebhookEvent(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	var body struct {
		EventID string `json:"eventId"`
	}
	if err := web.DecodeJSON(w, r, &body, false); err != nil {
		return err
	}
	d, err := a.svc.Webhooks.Redeliver(r.Context(), p, r.PathValue("id"), body.EventID)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, d)
	return nil
}

func (a *api) testWebhookEndpoint(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	if err := web.DecodeJSON(w, r, &struct{}{}, true); err != nil {
		return err
	}
	d, err := a.svc.Webhooks.SendTest(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, d)
	return nil
}

// webhookSigningKey is public: receivers verify v1a signatures with it.
func (a *api) webhookSigningKey(w http.ResponseWriter, r *http.Request) error {
	if _, err := strictQuery(r); err != nil {
		return err
	}
	k, err := a.svc.Webhooks.SigningKey(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	web.WriteJSON(w, http.StatusOK, k)
	return nil
}
