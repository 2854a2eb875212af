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
	return idempotent(w, r, false, func(key string, req faxes.BatchRequest) (*faxes.BatchView, bool, error) {
		return a.svc.Faxes.SendBatch(r.Context(), p, key, req)
	})
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
	return idempotent(w, r, true, func(key string, req faxes.ResendRequest) (*faxes.Fax, bool, error) {
		return a.svc.Faxes.Resend(r.Context(), p, key, r.PathValue("id"), req)
	})
}
