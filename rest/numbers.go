package rest

import (
	"net/http"
	"strconv"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/numbers"
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
		if err != nil || n < 1 || n > numbers.MaxSearchLimit {
			return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "limit must be an integer from 1 to %d", numbers.MaxSearchLimit).With("parameter", "limit")
		}
		limit = n
	}
	found, err := a.svc.Numbers.Search(r.Context(), p, numbers.Search{
		Country: q.Get("country"), AreaCode: q.Get("areaCode"), Locality: q.Get("locality"), Limit: limit,
	})
	if err != nil {
		return err
	}
	if found == nil {
		found = []numbers.AvailableNumber{}
	}
	web.WriteJSON(w, http.StatusOK, listData[numbers.AvailableNumber]{Data: found})
	return nil
}

func (a *api) buyNumber(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	var body numbers.BuyRequest
	if err := web.DecodeJSON(w, r, &body, false); err != nil {
		return err
	}
	n, err := a.svc.Numbers.Buy(r.Context(), p, body)
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
	ns, err := a.svc.Numbers.List(r.Context(), p, all)
	if err != nil {
		return err
	}
	if ns == nil {
		ns = []numbers.Number{}
	}
	web.WriteJSON(w, http.StatusOK, listData[numbers.Number]{Data: ns})
	return nil
}

func (a *api) getNumber(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	n, err := a.svc.Numbers.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, n)
	return nil
}

// payNumber pays an awaiting_payment number's first month from credits.
func (a *api) payNumber(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	n, err := a.svc.Numbers.PayWithCredits(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, n)
	return nil
}

// releaseNumber serves both POST …/release and DELETE /api/v1/numbers/{id}.
func (a *api) releaseNumber(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	n, err := a.svc.Numbers.Release(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, n)
	return nil
}
