package rest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/web"
)

// maxTypeFilters bounds the type filter of listEvents: the catalog is a
// few dozen types, so more values than this are a mistake, not a query.
const maxTypeFilters = 64

// listEvents lists the caller's events, newest first. type may repeat and
// each may be comma-separated; the other parameters appear once.
func (a *api) listEvents(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the query string is malformed")
	}
	types := q["type"]
	if len(types) > maxTypeFilters {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "at most %d type parameters", maxTypeFilters).With("parameter", "type")
	}
	// The other parameters follow every list's rules (each once, known).
	q.Del("type")
	others := r.Clone(r.Context())
	others.URL.RawQuery = q.Encode()
	q, limit, err := listQuery(others)
	if err != nil {
		return err
	}
	parsed, err := events.ParseTypes(types)
	if err != nil {
		return err
	}
	if len(parsed) > maxTypeFilters {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "at most %d event types", maxTypeFilters).With("parameter", "type")
	}
	page, err := a.svc.Events.List(r.Context(), p, parsed, q.Get("starting_after"), limit)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, page)
	return nil
}

func (a *api) getEvent(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	e, err := a.svc.Events.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, e)
	return nil
}

// getCreditAlert reads the low-balance alert of the key's mode.
func (a *api) getCreditAlert(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	if _, err := strictQuery(r); err != nil {
		return err
	}
	alert, err := a.svc.Credits.Alert(r.Context(), p)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, alert)
	return nil
}

// setCreditAlert replaces the low-balance alert: {"threshold": "5.00"}, or
// {"threshold": null} to turn it off. The member is required, so an empty
// object cannot turn an alert off by accident.
func (a *api) setCreditAlert(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	var body struct {
		Threshold json.RawMessage `json:"threshold"`
	}
	if err := web.DecodeJSON(w, r, &body, false); err != nil {
		return err
	}
	var threshold *string
	switch raw := bytes.TrimSpace(body.Threshold); {
	case len(raw) == 0:
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, `threshold is required: a decimal USD string such as "5.00", or null to turn the alert off`).With("parameter", "threshold")
	case string(raw) == "null":
	default:
		if err := json.Unmarshal(raw, &threshold); err != nil {
			return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, `threshold must be a string such as "5.00" (money is a decimal string, as everywhere in this API) or null`).With("parameter", "threshold")
		}
	}
	alert, err := a.svc.Credits.SetAlert(r.Context(), p, threshold)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, alert)
	return nil
}
