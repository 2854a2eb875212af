package rest

import (
	"net/http"
	"strconv"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
)

// The numbers endpoints: search a provider's inventory, buy (reserve and
// get a checkoutUrl), list, read and release. Every decision (what can be
// bought, by whom, what it costs, what a release does) is core's.

func (a *api) searchNumbers(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	q, err := strictQuery(r, "country", "areaCode", "locality", "limit")
	if err != nil {
		return err
	}
	limit := 0 // core's default
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > core.MaxNumberSearchLimit {
			return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "limit must be an integer from 1 to %d", core.MaxNumberSearchLimit).With("parameter", "limit")
		}
		limit = n
	}
	found, err := a.svc.Core.SearchNumbers(r.Context(), p, core.NumberSearch{
		Country: q.Get("country"), AreaCode: q.Get("areaCode"), Locality: q.Get("locality"), Limit: limit,
	})
	if err != nil {
		return err
	}
	if found == nil {
		found = []core.AvailableNumber{}
	}
	web.WriteJSON(w, http.StatusOK, listData[core.AvailableNumber]{Data: found})
	return nil
}

func (a *api) buyNumber(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	var body core.BuyNumberRequest
	if err := web.DecodeJSON(w, r, &body, false); err != nil {
		return err
	}
	n, err := a.svc.Core.BuyNumber(r.Context(), p, body)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, n)
	return nil
}

func (a *api) listNumbers(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	q, err := strictQuery(r, "all")
	if err != nil {
		return err
	}
	all := false
	if q.Has("all") {
		all, err = strconv.ParseBool(q.Get("all"))
		if err != nil {
			return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "all must be true or false").With("parameter", "all")
		}
	}
	ns, err := a.svc.Core.ListNumbers(r.Context(), p, all)
	if err != nil {
		return err
	}
	if ns == nil {
		ns = []core.Number{}
	}
	web.WriteJSON(w, http.StatusOK, listData[core.Number]{Data: ns})
	return nil
}

func (a *api) getNumber(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	n, err := a.svc.Core.GetNumber(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, n)
	return nil
}

// payNumber pays an awaiting_payment number's first month from credits.
func (a *api) payNumber(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	n, err := a.svc.Core.PayNumberWithCredits(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, n)
	return nil
}

// releaseNumber serves both POST …/release and DELETE /api/v1/numbers/{id}.
func (a *api) releaseNumber(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	n, err := a.svc.Core.ReleaseNumber(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, n)
	return nil
}
