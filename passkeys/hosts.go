package passkeys

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/web"
)

// Delegated hosts (spec, Authentication section 4; issue 12): the Hosts
// page where the owner provisions the agent runtimes that may register
// agents, and sees and revokes them and their agents. Every rule (limits,
// keys, tokens, states) is core's; this file only renders and translates.

// maxPublicKeyField bounds the pasted public JWK: an Ed25519 public JWK is
// about 100 bytes, so 4 KiB leaves room for whitespace and kid/alg/use.
const maxPublicKeyField = 4 << 10

// capInfo is a delegated capability and what it lets an agent do.
type capInfo struct {
	Name, Description string
	Checked           bool
}

// capText says in plain words what each capability allows; send_fax says
// the passkey rule, because it is the one an owner must not misread.
var capText = map[hosts.Capability]string{
	hosts.CapValidateFax:          "Check a fax and get its price (sends nothing)",
	hosts.CapCreateUpload:         "Upload documents to fax",
	hosts.CapSendFax:              "Ask to send faxes: every fax still waits for your passkey",
	hosts.CapGetFaxStatus:         "See the faxes it sent and whether they were delivered",
	hosts.CapGetCredits:           "See your credit balance",
	hosts.CapCreateCreditCheckout: "Start credit purchases (you still pay on a checkout page)",
	hosts.CapListInbox:            "See the faxes you receive (sender, pages, a preview of the text)",
	hosts.CapReadInboxFax:         "Read a fax you received (its text, and a short-lived link to the PDF)",
}

func describeCaps(caps []hosts.Capability, checked bool) []capInfo {
	out := make([]capInfo, 0, len(caps))
	for _, c := range caps {
		d, ok := capText[c]
		if !ok {
			d = "Capability “" + string(c) + "”"
		}
		out = append(out, capInfo{Name: string(c), Description: d, Checked: checked})
	}
	return out
}

// hostForm is the create form as the owner last filled it (kept on an
// error so nothing has to be typed again).
type hostForm struct {
	Name      string
	PublicKey string
	Caps      []capInfo
}

// hostCreatedView is the answer to a create: the host id, and for a host
// created without a key the enrollment token, shown in this one response.
type hostCreatedView struct {
	Host            *hosts.Host
	EnrollmentToken string
	ExpiresAt       *time.Time
	EnrollCommand   string
}

type hostView struct {
	hosts.Host
	StatusLabel string
	StatusClass string
	Live        bool
	Defaults    []capInfo
	Agents      []delegatedAgentView
	LiveAgents  int
}

type delegatedAgentView struct {
	hosts.Agent
	StatusLabel string
	StatusClass string
	Live        bool
	GrantedList []capInfo
	AskedList   []capInfo
	// DevicePath is the device page of a pending agent (the owner types
	// the code the agent shows).
	DevicePath string
}

type hostsBody struct {
	Created *hostCreatedView
	Form    hostForm
	Hosts   []hostView
	APIURL  string
}

func (c *Console) hostsPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	notice := ""
	switch r.URL.Query().Get("revoked") {
	case "host":
		notice = "Host revoked. It and all its agents can no longer act for you."
	case "agent":
		notice = "Agent revoked. Its requests are refused from now on."
	}
	c.showHosts(w, r, s, http.StatusOK, hostsBody{Form: hostForm{Caps: describeCaps(hosts.Capabilities(), false)}}, notice, "")
}

func (c *Console) showHosts(w http.ResponseWriter, r *http.Request, s *signedIn, status int, b hostsBody, notice, errMsg string) {
	hosts, err := c.svc.Hosts.List(r.Context(), s.owner.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	now := c.now()
	for _, h := range hosts {
		b.Hosts = append(b.Hosts, c.hostView(h, now))
	}
	b.APIURL = c.svc.Config().APIURL
	d := c.page(s, "Hosts", "hosts", b)
	d.Notice, d.Error = notice, errMsg
	c.render(w, r, status, "hosts", d)
}

func (c *Console) hostView(h hosts.WithAgents, now time.Time) hostView {
	v := hostView{Host: h.Host, Defaults: describeCaps(h.Host.DefaultCapabilities, true)}
	switch h.Host.Status {
	case hosts.Active:
		v.StatusLabel, v.StatusClass, v.Live = "active", "approved", true
	case hosts.PendingEnrollment:
		if h.Host.EnrollmentExpiresAt != nil && !now.Before(*h.Host.EnrollmentExpiresAt) {
			v.StatusLabel, v.StatusClass = "enrollment token expired", "expired"
		} else {
			v.StatusLabel, v.StatusClass = "waiting for enrollment", "pending"
		}
		v.Live = true // a pending host can be revoked: its token then stops working
	case hosts.Revoked:
		v.StatusLabel, v.StatusClass = "revoked", "declined"
	default:
		v.StatusLabel, v.StatusClass = string(h.Host.Status), "pending"
	}
	for _, a := range h.Agents {
		av := delegatedAgentView{Agent: a, GrantedList: describeCaps(a.Granted, true), AskedList: describeCaps(a.Requested, true)}
		st := a.Status
		if st == hosts.AgentPending && !a.DeviceExpires.IsZero() && !now.Before(a.DeviceExpires) {
			st = hosts.AgentExpired // the device code lapsed: the host has to re-issue one
		}
		switch st {
		case hosts.AgentActive:
			av.StatusLabel, av.StatusClass, av.Live = "active", "approved", true
		case hosts.AgentPending:
			av.StatusLabel, av.StatusClass, av.Live = "waiting for your approval", "pending", true
			av.DevicePath = devicePath(a.ID)
		case hosts.AgentExpired:
			av.StatusLabel, av.StatusClass, av.Live = "approval code expired", "expired", true
		case hosts.AgentRejected:
			av.StatusLabel, av.StatusClass = "declined", "declined"
		case hosts.AgentRevoked:
			av.StatusLabel, av.StatusClass = "revoked", "declined"
		default:
			av.StatusLabel, av.StatusClass = string(st), "pending"
		}
		if av.Live {
			v.LiveAgents++
		}
		v.Agents = append(v.Agents, av)
	}
	return v
}

// createHost answers with the page itself, not a redirect: an enrollment
// token is shown in this one response and stored only hashed.
func (c *Console) createHost(w http.ResponseWriter, r *http.Request, s *signedIn) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	key := strings.TrimSpace(r.PostFormValue("public_key"))
	picked := r.PostForm["capability"]
	form := hostForm{Name: name, PublicKey: key}
	for _, ci := range describeCaps(hosts.Capabilities(), false) {
		ci.Checked = slices.Contains(picked, ci.Name)
		form.Caps = append(form.Caps, ci)
	}
	again := func(status int, msg string) {
		c.showHosts(w, r, s, status, hostsBody{Form: form}, "", msg)
	}
	problem := ""
	switch {
	case name == "":
		problem = "Give the host a name, so that you recognise it in approvals."
	case web.DisplayTextProblem(name) != "":
		problem = "The host name " + web.DisplayTextProblem(name) + "; use plain text."
	case len(key) > maxPublicKeyField:
		problem = "The public key is too long: paste the host's Ed25519 public JWK only (about 100 characters)."
	case len(picked) > len(hosts.Capabilities()):
		problem = "Too many capabilities were sent."
	}
	if problem != "" {
		form.PublicKey = truncateField(form.PublicKey)
		again(http.StatusBadRequest, problem)
		return
	}
	req := hosts.CreateRequest{Name: name}
	if key != "" {
		if !json.Valid([]byte(key)) {
			again(http.StatusBadRequest, "The public key is not JSON: paste the host's Ed25519 public JWK, e.g. {\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"…\"}.")
			return
		}
		req.PublicKey = json.RawMessage(key)
	}
	for _, p := range picked {
		req.DefaultCapabilities = append(req.DefaultCapabilities, hosts.Capability(p))
	}
	created, err := c.svc.Hosts.Create(r.Context(), s.owner.ID, req)
	if err != nil {
		if e := core.AsError(err); e.Kind != core.KindInternal {
			if e.RetryAfterSeconds > 0 {
				w.Header().Set("Retry-After", itoa(e.RetryAfterSeconds))
			}
			again(statusOf(e.Kind), hostErrorText(e))
			return
		}
		c.fail(w, r, err)
		return
	}
	cv := &hostCreatedView{Host: created.Host, EnrollmentToken: created.EnrollmentToken}
	if created.EnrollmentToken != "" {
		cv.ExpiresAt = created.Host.EnrollmentExpiresAt
		enroll, err := c.url("hostagent.hostEnroll")
		if err != nil {
			c.fail(w, r, err)
			return
		}
		cv.EnrollCommand = enrollCommand(enroll, created.EnrollmentToken, created.Host.Name)
	}
	c.showHosts(w, r, s, http.StatusOK, hostsBody{Created: cv, Form: hostForm{Caps: describeCaps(hosts.Capabilities(), false)}}, "", "")
}

// truncateField keeps an oversized field out of the re-rendered page.
func truncateField(s string) string {
	if len(s) > maxPublicKeyField {
		return ""
	}
	return s
}

// hostErrorText is core's message, with what to do next for the errors an
// owner can fix on this form.
func hostErrorText(e *core.Error) string {
	switch e.Code {
	case hosts.CodeInvalidPublicKey:
		return e.Message + " Paste the host's Ed25519 public JWK ({\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"…\"}), never its private key; or leave the field empty to get an enrollment token."
	case hosts.CodeHostKeyInUse:
		return e.Message + " Every host needs a key pair of its own: generate a new one on the host."
	case hosts.CodeTooManyHosts:
		return e.Message + " Revoke a host you no longer use first."
	}
	return e.Message
}

// enrollCommand is the call to paste on the host: the enroll endpoint's
// URL, the token, the host's public key (to fill in) and the name, as one
// shell-quoted JSON body.
func enrollCommand(enrollURL, token, name string) string {
	type jwk struct {
		Kty string `json:"kty"`
		Crv string `json:"crv"`
		X   string `json:"x"`
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // the page escapes; the shell must get < and > as typed
	_ = enc.Encode(struct {
		Token     string `json:"token"`
		Name      string `json:"name"`
		PublicKey jwk    `json:"public_key"`
	}{token, name, jwk{"OKP", "Ed25519", "<HOST_PUBLIC_KEY_X>"}})
	return "curl -sS -X POST " + shellQuote(enrollURL) + " \\\n  -H 'Content-Type: application/json' \\\n  -d " + shellQuote(strings.TrimSpace(body.String()))
}

// shellQuote single-quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// revokeHost needs the confirmation box ticked: revoking a host stops
// every agent it runs at once, and cannot be undone.
func (c *Console) revokeHost(w http.ResponseWriter, r *http.Request, s *signedIn) {
	if r.PostFormValue("confirm") != "yes" {
		c.showHosts(w, r, s, http.StatusBadRequest, hostsBody{Form: hostForm{Caps: describeCaps(hosts.Capabilities(), false)}}, "",
			"Tick “All its agents stop” to confirm that you want to revoke the host and every agent it runs.")
		return
	}
	if err := c.svc.Hosts.Revoke(r.Context(), s.owner.ID, r.PathValue("id")); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/hosts?revoked=host", http.StatusSeeOther)
}

func (c *Console) revokeDelegatedAgent(w http.ResponseWriter, r *http.Request, s *signedIn) {
	if _, err := c.svc.Hosts.RevokeAgent(r.Context(), s.owner.ID, "", r.PathValue("id")); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/hosts?revoked=agent", http.StatusSeeOther)
}
