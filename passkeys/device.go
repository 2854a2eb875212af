package passkeys

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/hosts"
)

// The device page (core.LinkDevicePage): the verification_uri of a
// delegated agent's device authorization (RFC 8628 names). The owner,
// signed in, sees the host, the agent and what it asks for, narrows it,
// types (or confirms) the user code, and approves or declines.

// maxUserCode bounds the typed user code; core's codes are far shorter.
const maxUserCode = 64

type deviceView struct {
	AgentID   string
	AgentName string
	HostName  string
	HostID    string
	Code      string
	ExpiresAt time.Time
	TriesLeft int
	Caps      []capInfo
}

type deviceBody struct {
	View    *deviceView
	Done    string // "approved" or "declined"
	Granted []capInfo
	NoLink  bool // opened without agent_id: the owner needs the full link
}

func (c *Console) devicePage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	q := r.URL.Query()
	agentID := strings.TrimSpace(q.Get("agent_id"))
	if agentID == "" {
		// Core looks device codes up by agent, not by user code: the page
		// cannot work from a typed code alone.
		d := c.page(s, "Open the agent's full link", "hosts", deviceBody{NoLink: true})
		c.render(w, r, http.StatusOK, "device", d)
		return
	}
	c.showDevice(w, r, s, http.StatusOK, agentID, boundCode(q.Get("code")), nil, "")
}

// boundCode keeps a typed or linked user code to its bound.
func boundCode(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxUserCode {
		return ""
	}
	return s
}

// showDevice renders the device form; picked (when not nil) keeps the
// owner's ticks across a wrong code.
func (c *Console) showDevice(w http.ResponseWriter, r *http.Request, s *signedIn, status int, agentID, code string, picked []string, errMsg string) {
	req, err := c.svc.Hosts.DeviceRequestForOwner(r.Context(), s.owner.ID, agentID)
	if err != nil {
		c.deviceError(w, r, s, err)
		return
	}
	v := &deviceView{AgentID: req.Agent.ID, AgentName: req.Agent.Name, Code: code, ExpiresAt: req.ExpiresAt, TriesLeft: req.TriesLeft,
		Caps: describeCaps(req.Agent.Requested, true)}
	if req.Host != nil {
		v.HostName, v.HostID = req.Host.Name, req.Host.ID
	}
	if picked != nil {
		for i := range v.Caps {
			v.Caps[i].Checked = slices.Contains(picked, v.Caps[i].Name)
		}
	}
	d := c.page(s, "Approve agent "+v.AgentName, "hosts", deviceBody{View: v})
	d.Error = errMsg
	c.render(w, r, status, "device", d)
}

// deviceError renders the device page's clear error pages.
func (c *Console) deviceError(w http.ResponseWriter, r *http.Request, s *signedIn, err error) {
	e := core.AsError(err)
	if e.Kind == core.KindInternal {
		c.fail(w, r, err)
		return
	}
	title := map[string]string{
		hosts.CodeAgentNotFound:      "No such agent request",
		hosts.CodeDeviceExpired:      "This request expired",
		hosts.CodeDeviceDecided:      "Already decided",
		hosts.CodeDeviceTooManyTries: "Too many wrong codes",
		hosts.CodeHostRevoked:        "The host was revoked",
		hosts.CodeAgentRevoked:       "The agent was revoked",
	}[e.Code]
	if title == "" {
		title = titleFor(statusOf(e.Kind))
	}
	msg := e.Message
	switch e.Code {
	case hosts.CodeDeviceExpired, hosts.CodeDeviceTooManyTries:
		msg += " The agent's host can ask for a new code; open the new link it prints."
	case hosts.CodeAgentNotFound:
		msg += " Check that you are signed in to the account that owns the host."
	}
	d := c.page(s, title, "hosts", nil)
	d.ErrorTitle, d.Error = title, msg
	c.render(w, r, statusOf(e.Kind), "error", d)
}

func (c *Console) decideDevice(w http.ResponseWriter, r *http.Request, s *signedIn) {
	agentID := strings.TrimSpace(r.PostFormValue("agent_id"))
	if agentID == "" || len(agentID) > 200 {
		c.deviceError(w, r, s, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "this form lacks the agent; open the link the agent printed"))
		return
	}
	code := boundCode(r.PostFormValue("user_code"))
	picked := r.PostForm["capability"]
	if len(picked) > len(hosts.Capabilities()) {
		picked = picked[:len(hosts.Capabilities())]
	}
	var approve bool
	switch r.PostFormValue("decision") {
	case "approve":
		approve = true
	case "decline":
	default:
		c.showDevice(w, r, s, http.StatusBadRequest, agentID, code, picked, "Choose approve or decline.")
		return
	}
	caps := make([]hosts.Capability, 0, len(picked))
	for _, p := range picked {
		caps = append(caps, hosts.Capability(p))
	}
	if approve && len(caps) == 0 {
		c.showDevice(w, r, s, http.StatusBadRequest, agentID, code, picked, "Tick at least one capability, or decline.")
		return
	}
	if approve && code == "" {
		c.showDevice(w, r, s, http.StatusBadRequest, agentID, code, picked, "Enter the code the agent shows you.")
		return
	}
	a, err := c.svc.Hosts.DecideDevice(r.Context(), s.owner.ID, agentID, code, approve, caps)
	if err != nil {
		switch core.ErrorCode(err) {
		case hosts.CodeDeviceWrongCode, hosts.CodeCapabilityWiden, hosts.CodeUnknownCapability, core.CodeInvalidRequest:
			c.showDevice(w, r, s, statusOf(core.ErrorKind(err)), agentID, "", picked, core.AsError(err).Message)
		default:
			c.deviceError(w, r, s, err)
		}
		return
	}
	done := "declined"
	if approve {
		done = "approved"
	}
	b := deviceBody{Done: done}
	if a != nil {
		b.Granted = describeCaps(a.Granted, true)
	}
	d := c.page(s, "Agent "+done, "hosts", b)
	if approve {
		d.Notice = "Approved. The agent gets its capabilities on its next status check; every fax it sends still waits for your passkey."
	} else {
		d.Notice = "Declined. The agent gets no access."
	}
	c.render(w, r, http.StatusOK, "device", d)
}

// deviceAgentID is the delegated agent behind a device approval in the
// inbox (its details name it).
func deviceAgentID(a *approvals.Approval) string {
	var d map[string]any
	if json.Unmarshal(a.Details, &d) != nil {
		return ""
	}
	for _, k := range []string{"agent_id", "agentId"} {
		if v, ok := d[k].(string); ok && strings.HasPrefix(v, core.PrefixDelegatedAgent) {
			return v
		}
	}
	return ""
}

// devicePath is the device page for an agent (without its code, which
// only the agent shows).
func devicePath(agentID string) string {
	return core.LinkDevicePage.Path() + "?agent_id=" + url.QueryEscape(agentID)
}
