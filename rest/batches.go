package rest

import (
	"net/http"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/web"
)

// Broadcasts (batches) and resends: one document to many recipients, and
// a new fax of an earlier fax's document. Core decides everything; these
// turn HTTP into its calls.

func (a *api) batchRoutes() []route {
	key := web.AuthAPIKey
	return []route{
		{"sendBatch", "POST", "/api/v1/batches", key, a.authed(a.sendBatch)},
		{"listBatches", "GET", "/api/v1/batches", key, a.authed(a.listBatches)},
		{"getBatch", "GET", "/api/v1/batches/{id}", key, a.authed(a.getBatch)},
		{"cancelBatch", "POST", "/api/v1/batches/{id}/cancel", key, a.authed(a.cancelBatch)},
		{"resendFax", "POST", "/api/v1/faxes/{id}/resend", key, a.authed(a.resendFax)},
	}
}

func (a *api) sendBatch(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	key, err := web.SingleHeader(r, "Idempotency-Key")
	if err != nil {
		return err
	}
	var req faxes.BatchRequest
	if err := web.DecodeJSON(w, r, &req, false); err != nil {
		return err
	}
	batch, replayed, err := a.svc.Faxes.SendBatch(r.Context(), p, key, req)
	if err != nil {
		return err
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	web.WriteJSON(w, http.StatusOK, batch)
	return nil
}

func (a *api) listBatches(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	q, limit, err := listQuery(r)
	if err != nil {
		return err
	}
	page, err := a.svc.Faxes.ListBatches(r.Context(), p, q.Get("starting_after"), limit)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, page)
	return nil
}

func (a *api) getBatch(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	batch, err := a.svc.Faxes.GetBatch(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, batch)
	return nil
}

func (a *api) cancelBatch(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	batch, err := a.svc.Faxes.CancelBatch(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, batch)
	return nil
}

func (a *api) resendFax(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	key, err := web.SingleHeader(r, "Idempotency-Key")
	if err != nil {
		return err
	}
	var req faxes.ResendRequest
	if err := web.DecodeJSON(w, r, &req, true); err != nil {
		return err
	}
	fax, replayed, err := a.svc.Faxes.Resend(r.Context(), p, key, r.PathValue("id"), req)
	if err != nil {
		return err
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	web.WriteJSON(w, http.StatusOK, fax)
	return nil
}
