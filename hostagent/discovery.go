package hostagent

import (
	"encoding/json"
	"net/http"
)

// configurationMaxAge is how long clients and caches may keep discovery:
// a few minutes, so a changed capability reaches clients soon.
const configurationMaxAge = "300"

// Configuration is GET /.well-known/agent-configuration (protocol §5.1):
// the same document on both origins, its issuer always {api_url}. The
// execute URL and the documentation are the URLs of their routes.
func (h *Handler) Configuration() (map[string]any, error) {
	execute, err := h.url("hostagent.execute")
	if err != nil {
		return nil, err
	}
	guide, err := h.url("oauth.guide")
	if err != nil {
		return nil, err
	}
	caps := make([]map[string]any, 0, len(h.caps))
	for _, c := range h.caps {
		caps = append(caps, c.json())
	}
	api := h.opts.APIURL
	return map[string]any{
		"version":       "1.0-draft",
		"provider_name": h.opts.ProviderName,
		"description":   h.opts.Description,
		"issuer":        api,
		// The execute URL; agent JWTs may name it or the issuer as aud.
		"default_location": execute,
		// Key type Ed25519; JWTs are signed with alg EdDSA.
		"algorithms":       []string{"Ed25519"},
		"modes":            []string{"delegated"},
		"approval_methods": []string{"device_authorization"},
		// Paths relative to the issuer (protocol §5.1). host_create and
		// host_enroll, device_code and capability_status are faxhub's.
		"endpoints": map[string]string{
			"host_create":       PathHostCreate,
			"host_enroll":       PathHostEnroll,
			"register":          PathRegister,
			"status":            PathStatus,
			"device_code":       PathDeviceCode,
			"revoke":            PathRevoke,
			"execute":           PathExecute,
			"capability_status": PathCapabilityStat,
		},
		"capabilities":              caps,
		"documentation":             guide,
		"dynamic_host_registration": false,
	}, nil
}

// configuration serves discovery: public, cacheable, readable from any
// origin (no credentials).
func (h *Handler) configuration(w http.ResponseWriter, r *http.Request) {
	doc, err := h.Configuration()
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "public, max-age="+configurationMaxAge)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(doc)
}

func (h *Handler) preflight(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Allow-Methods", "GET, OPTIONS")
	w.Header().Set("Access-Control-Max-Age", configurationMaxAge)
	w.WriteHeader(http.StatusNoContent)
}
