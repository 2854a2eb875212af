package hostagent

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/hosts"
)

// verifyHost verifies the request's host JWT; limited endpoints charge
// the host's allowance in the same commit as its jti.
func (h *Handler) verifyHost(r *http.Request, limited bool) (*VerifiedHost, error) {
	raw, err := bearerJWT(r)
	if err != nil {
		return nil, err
	}
	var limit core.Limit
	if limited {
		limit = core.LimitHostRegister
	}
	return h.verify.Host(r.Context(), raw, limit)
}

// verifyAgent verifies the request's agent JWT; limited endpoints charge
// the agent's allowance in the same commit as its jti.
func (h *Handler) verifyAgent(r *http.Request, limited bool) (*VerifiedAgent, error) {
	raw, err := bearerJWT(r)
	if err != nil {
		return nil, err
	}
	var limit core.Limit
	if limited {
		limit = core.LimitAgentExecute
	}
	return h.verify.Agent(r.Context(), raw, limit)
}

// grant is one entry of agent_capability_grants (protocol §5.3): active
// grants carry the capability's description and schemas, pending ones only
// name and status, denied ones a reason.
func (h *Handler) grants(a *hosts.Agent) []map[string]any {
	out := make([]map[string]any, 0, len(a.Requested))
	for _, c := range a.Requested {
		g := map[string]any{"capability": c}
		switch {
		case a.Status == hosts.AgentPending || a.Status == hosts.AgentExpired:
			g["status"] = "pending"
		case a.Status == hosts.AgentActive && slices.Contains(a.Granted, c):
			g["status"] = "active"
			if row, ok := h.capability(string(c)); ok {
				g["description"], g["input"], g["output"] = row.Description, row.Input, row.Output
			}
		case a.Status == hosts.AgentRevoked:
			g["status"], g["reason"] = "denied", "the agent was revoked"
		case a.Status == hosts.AgentRejected:
			g["status"], g["reason"] = "denied", "the owner declined this agent"
		default:
			g["status"], g["reason"] = "denied", "the owner did not grant this capability"
		}
		out = append(out, g)
	}
	return out
}

// agentJSON is what register, status and device/code answer.
func (h *Handler) agentJSON(a *hosts.Agent, approval *hosts.DeviceApproval) map[string]any {
	out := map[string]any{
		"agent_id": a.ID, "host_id": a.HostID, "name": a.Name, "mode": "delegated", "status": a.Status,
		"agent_capability_grants": h.grants(a), "created_at": a.CreatedAt.UTC().Format(time.RFC3339),
	}
	if a.ActivatedAt != nil {
		out["activated_at"] = a.ActivatedAt.UTC().Format(time.RFC3339)
	}
	if a.LastUsedAt != nil {
		out["last_used_at"] = a.LastUsedAt.UTC().Format(time.RFC3339)
	}
	if approval != nil {
		out["approval"] = approval
	}
	return out
}

// registerRequest is POST /api/auth/agent/register. The members of other
// identity types (type, assertion, identity_assertion, id_token) are read
// only to refuse them by name.
type registerRequest struct {
	Name            string            `json:"name"`
	HostName        string            `json:"host_name"`
	Mode            string            `json:"mode"`
	Capabilities    []json.RawMessage `json:"capabilities"`
	PreferredMethod string            `json:"preferred_method"`
	ForceApproval   bool              `json:"force_approval"`
	Reason          string            `json:"reason"`
	LoginHint       string            `json:"login_hint"`
	BindingMessage  string            `json:"binding_message"`

	Type              string          `json:"type"`
	Assertion         json.RawMessage `json:"assertion"`
	IdentityAssertion json.RawMessage `json:"identity_assertion"`
	IDToken           json.RawMessage `json:"id_token"`
}

// maxRequestedCapabilities bounds the capabilities list of a registration.
const maxRequestedCapabilities = 32

// capabilities reads the requested capabilities: names, or objects with a
// name (constraints are not offered by faxhub).
func (req *registerRequest) capabilities() ([]hosts.Capability, error) {
	if len(req.Capabilities) > maxRequestedCapabilities {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "at most %d capabilities may be requested", maxRequestedCapabilities)
	}
	out := make([]hosts.Capability, 0, len(req.Capabilities))
	for _, raw := range req.Capabilities {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			var obj struct {
				Name        string          `json:"name"`
				Constraints json.RawMessage `json:"constraints"`
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&obj); err != nil || obj.Name == "" {
				return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "each capability is a name or {\"name\": …}")
			}
			if len(obj.Constraints) > 0 && string(obj.Constraints) != "null" {
				return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "capability constraints are not supported; request %q without constraints", obj.Name)
			}
			name = obj.Name
		}
		out = append(out, hosts.Capability(name))
	}
	return out, nil
}

// register is POST /api/auth/agent/register with a host JWT carrying
// agent_public_key.
func (h *Handler) register(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	vh, err := h.verifyHost(r, true)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var req registerRequest
	if err := decode(w, r, &req, maxJSONBytes); err != nil {
		h.writeError(w, r, err)
		return
	}
	switch {
	case req.Type != "" && req.Type != "delegated":
		h.writeError(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest,
			"identity type %q is not accepted: a delegated agent is registered by its owner's host, with a host JWT and the agent's own key (anonymous and external identities are refused)", req.Type))
		return
	case len(req.Assertion) > 0 || len(req.IdentityAssertion) > 0 || len(req.IDToken) > 0:
		h.writeError(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest,
			"external identity provider assertions are not accepted here: a delegated agent is registered only by its owner's host, with a host JWT"))
		return
	case req.Mode != "" && req.Mode != "delegated":
		h.writeError(w, r, core.Errorf(core.KindInvalid, codeUnsupportedMode, "mode %q is not supported; faxhub offers delegated agents only", req.Mode))
		return
	}
	caps, err := req.capabilities()
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if len(vh.AgentPublicKey) == 0 {
		h.writeError(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the host JWT must carry agent_public_key (the agent's Ed25519 public JWK) to register an agent"))
		return
	}
	key, err := hosts.ParsePublicJWK(vh.AgentPublicKey)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	view, err := h.svc.Hosts.RegisterAgent(ctx, vh.Host, hosts.AgentRequest{
		Name: req.Name, Mode: "delegated", PreferredMethod: req.PreferredMethod, Capabilities: caps,
		ForceApproval: req.ForceApproval, AgentKey: key,
	})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h.agentJSON(view.Agent, view.Approval))
}

// status is GET /api/auth/agent/status?agent_id= with a fresh host JWT.
func (h *Handler) status(w http.ResponseWriter, r *http.Request) {
	vh, err := h.verifyHost(r, false)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	id := r.URL.Query().Get("agent_id")
	if id == "" {
		h.writeError(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "agent_id is required"))
		return
	}
	a, err := h.svc.Hosts.GetAgent(r.Context(), vh.Host, id)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h.agentJSON(a, nil))
}

type agentIDRequest struct {
	AgentID string `json:"agent_id"`
}

// deviceCode is POST /api/auth/agent/device/code: a new device code for
// a registered pending agent (the old one stops working).
func (h *Handler) deviceCode(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	vh, err := h.verifyHost(r, true)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var req agentIDRequest
	if err := decode(w, r, &req, maxJSONBytes); err != nil {
		h.writeError(w, r, err)
		return
	}
	if req.AgentID == "" {
		h.writeError(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "agent_id is required"))
		return
	}
	view, err := h.svc.Hosts.ReissueDeviceCode(ctx, vh.Host, req.AgentID)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h.agentJSON(view.Agent, view.Approval))
}

// revoke is POST /api/auth/agent/revoke, by the owning host (host JWT) or
// by the owner (session, same-origin).
func (h *Handler) revoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var ownerID, hostID string
	if len(r.Header.Values("Authorization")) > 0 {
		vh, err := h.verifyHost(r, false)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		hostID = vh.Host.ID
	} else {
		sess, err := h.ownerSession(r)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		ownerID = sess.OwnerID
	}
	var req agentIDRequest
	if err := decode(w, r, &req, maxJSONBytes); err != nil {
		h.writeError(w, r, err)
		return
	}
	if req.AgentID == "" {
		h.writeError(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "agent_id is required"))
		return
	}
	a, err := h.svc.Hosts.RevokeAgent(ctx, ownerID, hostID, req.AgentID)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"agent_id": a.ID, "status": "revoked"})
}
