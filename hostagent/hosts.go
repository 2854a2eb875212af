package hostagent

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/web"
)

// decode reads a strict JSON body of at most limit bytes (core/web's
// decoder: unknown fields, case-folded and duplicate names refused).
func decode(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	return web.DecodeJSONLimit(w, r, v, limit, false)
}

// ownerSession is the signed-in owner of a first-party request: the
// cross-origin check of every owner endpoint, then the session cookie.
func (h *Handler) ownerSession(r *http.Request) (*accounts.Session, error) {
	if err := h.crossOrigin.Check(r); err != nil {
		return nil, core.Errorf(core.KindForbidden, codeUnauthorized, "cross-origin requests are refused; use the console")
	}
	sess, err := web.OwnerSession(r, h.svc.Accounts)
	if err != nil {
		return nil, err
	}
	if sess == nil {
		return nil, core.Errorf(core.KindUnauthenticated, codeAuthenticationNeeded, "sign in to the console first (the owner's session cookie)")
	}
	return sess, nil
}

// hostJSON is a host as the owner's endpoints answer it; the enrollment
// token appears once, in the answer of the create that made it.
type hostJSON struct {
	*hosts.Host
	EnrollmentToken string     `json:"enrollmentToken,omitempty"`
	ExpiresAt       *time.Time `json:"expiresAt,omitempty"`
}

// hostCreate is POST /api/auth/host/create with the owner's session.
func (h *Handler) hostCreate(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess, err := h.ownerSession(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var req struct {
		Name                string             `json:"name"`
		PublicKey           json.RawMessage    `json:"public_key"`
		DefaultCapabilities []hosts.Capability `json:"default_capabilities"`
	}
	if err := decode(w, r, &req, maxJSONBytes); err != nil {
		h.writeError(w, r, err)
		return
	}
	if string(req.PublicKey) == "null" {
		req.PublicKey = nil
	}
	res, err := h.svc.Hosts.Create(ctx, sess.OwnerID, hosts.CreateRequest{Name: req.Name, PublicKey: req.PublicKey, DefaultCapabilities: req.DefaultCapabilities})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := hostJSON{Host: res.Host, EnrollmentToken: res.EnrollmentToken}
	if res.EnrollmentToken != "" {
		out.ExpiresAt = res.Host.EnrollmentExpiresAt
	}
	writeJSON(w, http.StatusCreated, out)
}

// hostEnroll is POST /api/auth/host/enroll: the one-use token of a host
// created without a key, and the key. Unauthenticated, so bounded per
// client address.
func (h *Handler) hostEnroll(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := h.svc.Kernel.Allow(ctx, core.LimitHostEnroll, web.ClientIP(r)); err != nil {
		h.writeError(w, r, err)
		return
	}
	var req struct {
		Token     string          `json:"token"`
		PublicKey json.RawMessage `json:"public_key"`
		Name      string          `json:"name"`
	}
	if err := decode(w, r, &req, maxJSONBytes); err != nil {
		h.writeError(w, r, err)
		return
	}
	if req.Token == "" || len(req.PublicKey) == 0 {
		h.writeError(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "token and public_key are required"))
		return
	}
	host, err := h.svc.Hosts.Enroll(ctx, req.Token, req.PublicKey, req.Name)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, hostJSON{Host: host})
}
