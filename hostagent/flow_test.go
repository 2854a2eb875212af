package hostagent_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/hostagent"
)

// Discovery is the same on both origins, its issuer {api_url}, public and
// cacheable, and lists every capability of core with its input schema.
func TestDiscovery(t *testing.T) {
	e := newEnv(t)
	var first string
	for _, origin := range []string{e.base, e.api} {
		r := call(t, nil, http.MethodGet, origin+hostagent.PathConfiguration, nil, http.Header{"Origin": {"https://elsewhere.test"}})
		if r.status != 200 {
			t.Fatalf("%s: %d %s", origin, r.status, r.raw)
		}
		if r.str("issuer") != e.api || r.str("version") != "1.0-draft" {
			t.Fatalf("issuer/version: %s", r.raw)
		}
		if !strings.Contains(r.header.Get("Cache-Control"), "max-age=") || r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("headers: %v", r.header)
		}
		if r.header.Get("Access-Control-Allow-Credentials") != "" {
			t.Fatal("credentials allowed")
		}
		if first == "" {
			first = r.raw
		} else if first != r.raw {
			t.Fatal("the two origins disagree")
		}
		var names []hosts.Capability
		for _, c := range r.body["capabilities"].([]any) {
			m := c.(map[string]any)
			names = append(names, hosts.Capability(m["name"].(string)))
			if m["description"] == "" || m["input"] == nil {
				t.Fatalf("capability without description or input: %v", m)
			}
		}
		if !slices.Equal(names, hosts.Capabilities()) {
			t.Fatalf("capabilities %v, core %v", names, hosts.Capabilities())
		}
		eps := r.body["endpoints"].(map[string]any)
		for _, p := range hostagent.Paths() {
			if p == hostagent.PathConfiguration {
				continue
			}
			found := false
			for _, v := range eps {
				found = found || v == p
			}
			if !found {
				t.Errorf("endpoint %s not in discovery", p)
			}
		}
	}
	r := call(t, nil, http.MethodOptions, e.api+hostagent.PathConfiguration, nil, http.Header{"Origin": {"https://elsewhere.test"}, "Access-Control-Request-Method": {"GET"}})
	if r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("preflight: %d %v", r.status, r.header)
	}
	r = call(t, nil, http.MethodPost, e.api+hostagent.PathConfiguration, "{}", nil)
	if r.status != http.StatusMethodNotAllowed {
		t.Fatalf("POST discovery: %d", r.status)
	}
}

func TestHostCreateAndEnroll(t *testing.T) {
	e := newEnv(t)
	w := e.owner("hosts@example.com")

	// With a key: active at once, on both origins.
	h := w.createHost()
	if !strings.HasPrefix(h.id, core.PrefixHost) {
		t.Fatalf("host id %q", h.id)
	}

	// Without the owner's session, cross-origin, or with a bad key: refused.
	k := newKey(t)
	body := map[string]any{"name": "CI", "public_key": k.jwk, "default_capabilities": []string{}}
	wantError(t, "no session", call(t, nil, http.MethodPost, e.base+hostagent.PathHostCreate, body, nil), 401, "authentication_required")
	r := call(t, w.Client, http.MethodPost, e.base+hostagent.PathHostCreate, body, http.Header{"Origin": {"https://evil.test"}, "Sec-Fetch-Site": {"cross-site"}})
	wantError(t, "cross-origin", r, 403, "unauthorized")
	bad := map[string]any{"name": "CI", "public_key": map[string]any{"kty": "OKP", "crv": "Ed25519", "x": k.jwk["x"], "d": "secret"}, "default_capabilities": []string{}}
	wantError(t, "private key", w.post(hostagent.PathHostCreate, bad, ""), 400, hosts.CodeInvalidPublicKey)
	wantError(t, "unknown field", w.post(hostagent.PathHostCreate, map[string]any{"name": "x", "default_capabilities": []string{}, "pubkey": 1}, ""), 400, "invalid_request")

	// The API origin serves host create too (same-origin there).
	r = call(t, w.Client, http.MethodPost, e.api+hostagent.PathHostCreate, map[string]any{"name": "API", "public_key": newKey(t).jwk, "default_capabilities": []string{}},
		http.Header{"Origin": {e.api}, "Sec-Fetch-Site": {"same-origin"}})
	if r.status != http.StatusCreated || r.str("hostId") == "" {
		t.Fatalf("host create on the API origin: %d %s", r.status, r.raw)
	}

	// Without a key: an enrollment token, once.
	r = w.post(hostagent.PathHostCreate, map[string]any{"name": "Server", "default_capabilities": []string{}}, "")
	if r.status != http.StatusCreated || !strings.HasPrefix(r.str("enrollmentToken"), core.SecretHostEnrollment) || r.str("expiresAt") == "" {
		t.Fatalf("create without key: %d %s", r.status, r.raw)
	}
	token, hostID := r.str("enrollmentToken"), r.str("hostId")
	// A pending-enrollment host cannot sign anything.
	pending := &host{e: e, id: hostID, key: newKey(t)}
	_, rr := pending.register([]string{"get_credits"}, false)
	wantError(t, "pending host", rr, 401, hosts.CodeInvalidJWT)

	// A failed enroll (the key of another host) does not use the token up.
	wantError(t, "key in use", call(t, nil, http.MethodPost, e.api+hostagent.PathHostEnroll,
		map[string]any{"token": token, "public_key": h.key.jwk, "name": "Server"}, nil), 409, hosts.CodeHostKeyInUse)
	wantError(t, "bad token", call(t, nil, http.MethodPost, e.api+hostagent.PathHostEnroll,
		map[string]any{"token": token + "x", "public_key": pending.key.jwk, "name": "Server"}, nil), 400, agents.CodeInvalidEnrollment)
	r = call(t, nil, http.MethodPost, e.api+hostagent.PathHostEnroll, map[string]any{"token": token, "public_key": pending.key.jwk, "name": "Server"}, nil)
	if r.status != 200 || r.str("hostId") != hostID || r.str("status") != string(hosts.Active) {
		t.Fatalf("enroll: %d %s", r.status, r.raw)
	}
	if _, rr := pending.register([]string{"get_credits"}, false); rr.status != 200 {
		t.Fatalf("register after enroll: %d %s", rr.status, rr.raw)
	}
	// Used: refused.
	r = call(t, nil, http.MethodPost, e.api+hostagent.PathHostEnroll, map[string]any{"token": token, "public_key": newKey(t).jwk, "name": "Again"}, nil)
	if r.status < 400 || r.status >= 500 {
		t.Fatalf("reused token: %d %s", r.status, r.raw)
	}
}

// The verifier's rules through the real endpoints and core (the table in
// verify_internal_test.go covers every row against a fake).
func TestVerifierEndToEnd(t *testing.T) {
	e := newEnv(t)
	w := e.owner("verify@example.com")
	h := w.createHost()
	status := func(jwt string) reply {
		return call(t, nil, http.MethodGet, e.api+hostagent.PathStatus+"?agent_id=dag_nothing", nil, bearer(jwt))
	}
	wantError(t, "unknown agent", status(h.jwt(nil)), 404, hosts.CodeAgentNotFound)
	jwt := h.jwt(nil)
	wantError(t, "first use", status(jwt), 404, hosts.CodeAgentNotFound)
	wantError(t, "reused jti", status(jwt), 401, hosts.CodeInvalidJWT)
	wantError(t, "Host-header aud", status(h.jwt(map[string]any{"aud": e.base})), 401, hosts.CodeInvalidJWT)
	// A forged Host header does not change the audience either.
	req, _ := http.NewRequest(http.MethodGet, e.api+hostagent.PathStatus+"?agent_id=dag_x", nil)
	req.Host = "evil.test"
	req.Header.Set("Authorization", "Bearer "+h.jwt(map[string]any{"aud": "http://evil.test"}))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Fatalf("aud from a forged Host header: %d", res.StatusCode)
	}
	wantError(t, "61 s", status(h.jwt(map[string]any{"exp": e.clock.Now().Add(61 * time.Second).Unix()})), 401, hosts.CodeInvalidJWT)
	wantError(t, "unknown host", status(h.jwt(map[string]any{"iss": "hst_unknown"})), 401, hosts.CodeInvalidJWT)
	wantError(t, "thumbprint iss", status(h.jwt(map[string]any{"iss": h.key.tp})), 404, hosts.CodeAgentNotFound)
	wantError(t, "no bearer", call(t, nil, http.MethodGet, e.api+hostagent.PathStatus+"?agent_id=x", nil, nil), 401, hosts.CodeInvalidJWT)
	wantError(t, "garbage", status("a.b.c"), 401, hosts.CodeInvalidJWT)
	wantError(t, "huge", status(strings.Repeat("a", 10000)), 401, hosts.CodeInvalidJWT)
	wantError(t, "expired", func() reply {
		j := h.jwt(nil)
		e.clock.Advance(2 * time.Minute)
		return status(j)
	}(), 401, hosts.CodeInvalidJWT)
}

func TestRegisterDeviceApproval(t *testing.T) {
	e := newEnv(t)
	w := e.owner("device@example.com")
	h := w.createHost()
	caps := []string{"validate_fax", "get_credits", "send_fax"}

	k, r := h.register(caps, false)
	if r.status != 200 || r.str("status") != "pending" || r.str("host_id") != h.id || r.str("mode") != "delegated" {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	id := r.str("agent_id")
	grants := r.body["agent_capability_grants"].([]any)
	if len(grants) != 3 || grants[0].(map[string]any)["status"] != "pending" {
		t.Fatalf("grants: %v", grants)
	}
	code1, complete := approvalOf(t, r)
	if !strings.HasPrefix(complete, e.base+core.LinkDevicePage.Path()) {
		t.Fatalf("verification_uri_complete %q", complete)
	}
	ag := &agent{h: h, id: id, key: k}
	wantError(t, "pending agent executes", ag.execute("get_credits", nil), 403, hosts.CodeAgentPending)

	// A pending retry with the same key answers the same agent, with a new
	// code; the old one is dead.
	r2 := call(t, nil, http.MethodPost, e.api+hostagent.PathRegister,
		map[string]any{"name": "Fax helper", "mode": "delegated", "capabilities": caps, "preferred_method": "device_authorization", "force_approval": false},
		bearer(h.jwt(map[string]any{"agent_public_key": k.jwk})))
	if r2.status != 200 || r2.str("agent_id") != id {
		t.Fatalf("retry: %d %s", r2.status, r2.raw)
	}
	code2, _ := approvalOf(t, r2)
	// device/code re-issues once more.
	r3 := call(t, nil, http.MethodPost, e.api+hostagent.PathDeviceCode, map[string]any{"agent_id": id}, bearer(h.jwt(nil)))
	if r3.status != 200 || r3.str("agent_id") != id {
		t.Fatalf("device code: %d %s", r3.status, r3.raw)
	}
	code3, _ := approvalOf(t, r3)
	for _, old := range []string{code1, code2} {
		if old == code3 {
			continue
		}
		if _, err := e.a.Svc.Hosts.DecideDevice(t.Context(), w.Account.ID, id, old, true, []hosts.Capability{"get_credits"}); err == nil {
			t.Fatal("an old device code approved the agent")
		}
	}
	// device/code never registers: unknown id.
	wantError(t, "device code unknown agent", call(t, nil, http.MethodPost, e.api+hostagent.PathDeviceCode, map[string]any{"agent_id": "dag_nope"}, bearer(h.jwt(nil))), 404, hosts.CodeAgentNotFound)

	// The owner narrows: only validate_fax and get_credits.
	if _, err := e.a.Svc.Hosts.DecideDevice(t.Context(), w.Account.ID, id, code3, true, []hosts.Capability{"validate_fax", "get_credits"}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	st := call(t, nil, http.MethodGet, e.api+hostagent.PathStatus+"?agent_id="+id, nil, bearer(h.jwt(nil)))
	if st.status != 200 || st.str("status") != "active" || st.body["approval"] != nil {
		t.Fatalf("status: %d %s", st.status, st.raw)
	}
	byCap := map[string]map[string]any{}
	for _, g := range st.body["agent_capability_grants"].([]any) {
		m := g.(map[string]any)
		byCap[m["capability"].(string)] = m
	}
	if byCap["get_credits"]["status"] != "active" || byCap["get_credits"]["input"] == nil || byCap["send_fax"]["status"] != "denied" {
		t.Fatalf("grants after narrowing: %v", byCap)
	}
	// Not granted: refused; granted: works.
	wantError(t, "narrowed away", ag.execute("send_fax", map[string]any{"to": "+14155550123", "document_id": "doc_x"}), 403, hosts.CodeCapabilityNotGranted)
	r = ag.execute("get_credits", nil)
	if r.status != 200 || r.body["data"].(map[string]any)["mode"] != "test" {
		t.Fatalf("get_credits: %d %s", r.status, r.raw)
	}
	// A registered key registers nothing again.
	r = call(t, nil, http.MethodPost, e.api+hostagent.PathRegister,
		map[string]any{"name": "Fax helper", "capabilities": caps}, bearer(h.jwt(map[string]any{"agent_public_key": k.jwk})))
	wantError(t, "agent exists", r, 409, hosts.CodeAgentExists)
	wantError(t, "device code for active agent", call(t, nil, http.MethodPost, e.api+hostagent.PathDeviceCode, map[string]any{"agent_id": id}, bearer(h.jwt(nil))), 409, hosts.CodeDeviceDecided)
}

func TestRegisterRefusals(t *testing.T) {
	e := newEnv(t)
	w := e.owner("refuse@example.com")
	h := w.createHost()
	post := func(body any, claims map[string]any) reply {
		return call(t, nil, http.MethodPost, e.api+hostagent.PathRegister, body, bearer(h.jwt(claims)))
	}
	k := newKey(t)
	withKey := map[string]any{"agent_public_key": k.jwk}
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{"name": "Bot", "capabilities": []string{"get_credits"}}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	wantError(t, "anonymous", post(base(map[string]any{"type": "anonymous"}), withKey), 400, "invalid_request")
	wantError(t, "assertion", post(base(map[string]any{"assertion": "eyJ..."}), withKey), 400, "invalid_request")
	wantError(t, "id_token", post(base(map[string]any{"id_token": "eyJ..."}), withKey), 400, "invalid_request")
	wantError(t, "identity_assertion", post(base(map[string]any{"identity_assertion": "eyJ..."}), withKey), 400, "invalid_request")
	wantError(t, "autonomous", post(base(map[string]any{"mode": "autonomous"}), withKey), 400, "unsupported_mode")
	wantError(t, "no agent key", post(base(nil), nil), 400, "invalid_request")
	wantError(t, "host key as agent key", post(base(nil), map[string]any{"agent_public_key": h.key.jwk}), 400, hosts.CodeHostKeyInUse)
	wantError(t, "unknown capability", post(base(map[string]any{"capabilities": []string{"teleport"}}), withKey), 400, "invalid_capabilities")
	wantError(t, "unknown member", post(base(map[string]any{"colour": "red"}), withKey), 400, "invalid_request")
	wantError(t, "host_public_key mismatch", post(base(nil), map[string]any{"agent_public_key": k.jwk, "host_public_key": newKey(t).jwk}), 401, hosts.CodeInvalidJWT)
	wantError(t, "agent JWT on register", call(t, nil, http.MethodPost, e.api+hostagent.PathRegister, base(nil),
		bearer(k.jwt(t, "agent+jwt", h.claims(nil)))), 401, hosts.CodeInvalidJWT)
	// Object form with a name works.
	r := post(base(map[string]any{"capabilities": []any{map[string]any{"name": "get_credits"}}}), withKey)
	if r.status != 200 {
		t.Fatalf("object capability: %d %s", r.status, r.raw)
	}
}

func TestDeclineExpiryRevoke(t *testing.T) {
	e := newEnv(t)
	w := e.owner("decline@example.com")
	h := w.createHost()

	// Declined: rejected, and its JWTs refused.
	k, r := h.register([]string{"get_credits"}, false)
	id := r.str("agent_id")
	if err := e.a.Svc.Hosts.DeclineDevice(t.Context(), w.Account.ID, id); err != nil {
		t.Fatal(err)
	}
	st := call(t, nil, http.MethodGet, e.api+hostagent.PathStatus+"?agent_id="+id, nil, bearer(h.jwt(nil)))
	if st.str("status") != string(hosts.AgentRejected) {
		t.Fatalf("declined status: %s", st.raw)
	}
	wantError(t, "rejected agent", (&agent{h: h, id: id, key: k}).execute("get_credits", nil), 403, hosts.CodeAgentRejected)

	// Expired: the device code lapses; status says expired, re-issue revives.
	k2, r := h.register([]string{"get_credits"}, false)
	id2 := r.str("agent_id")
	e.clock.Advance(hosts.DeviceApprovalTTL + time.Second)
	st = call(t, nil, http.MethodGet, e.api+hostagent.PathStatus+"?agent_id="+id2, nil, bearer(h.jwt(nil)))
	if st.str("status") != string(hosts.AgentExpired) {
		t.Fatalf("expired status: %s", st.raw)
	}
	wantError(t, "expired agent", (&agent{h: h, id: id2, key: k2}).execute("get_credits", nil), 403, hosts.CodeAgentExpired)
	r = call(t, nil, http.MethodPost, e.api+hostagent.PathDeviceCode, map[string]any{"agent_id": id2}, bearer(h.jwt(nil)))
	code, _ := approvalOf(t, r)
	if _, err := e.a.Svc.Hosts.DecideDevice(t.Context(), w.Account.ID, id2, code, true, []hosts.Capability{"get_credits"}); err != nil {
		t.Fatalf("approve after re-issue: %v", err)
	}
	ag := &agent{h: h, id: id2, key: k2}
	if r := ag.execute("get_credits", nil); r.status != 200 {
		t.Fatalf("active after re-issue: %d %s", r.status, r.raw)
	}

	// Revoke by the host, then by the owner's session; another host's agent
	// is not found.
	other := w.createHost()
	wantError(t, "other host revokes", call(t, nil, http.MethodPost, e.api+hostagent.PathRevoke, map[string]any{"agent_id": id2}, bearer(other.jwt(nil))), 404, hosts.CodeAgentNotFound)
	r = call(t, nil, http.MethodPost, e.api+hostagent.PathRevoke, map[string]any{"agent_id": id2}, bearer(h.jwt(nil)))
	if r.status != 200 || r.str("status") != "revoked" || r.str("agent_id") != id2 {
		t.Fatalf("host revoke: %d %s", r.status, r.raw)
	}
	wantError(t, "revoked agent", ag.execute("get_credits", nil), 403, hosts.CodeAgentRevoked)

	ag3 := w.activeAgent(h, "get_credits")
	wantError(t, "owner revoke cross-origin", call(t, w.Client, http.MethodPost, e.base+hostagent.PathRevoke, map[string]any{"agent_id": ag3.id},
		http.Header{"Origin": {"https://evil.test"}, "Sec-Fetch-Site": {"cross-site"}}), 403, "unauthorized")
	r = w.post(hostagent.PathRevoke, map[string]any{"agent_id": ag3.id}, "")
	if r.status != 200 || r.str("status") != "revoked" {
		t.Fatalf("owner revoke: %d %s", r.status, r.raw)
	}
	wantError(t, "owner-revoked agent", ag3.execute("get_credits", nil), 403, hosts.CodeAgentRevoked)

	// Revoking the host stops every agent at once.
	ag4 := w.activeAgent(h, "get_credits")
	if err := e.a.Svc.Hosts.Revoke(t.Context(), w.Account.ID, h.id); err != nil {
		t.Fatal(err)
	}
	wantError(t, "agent of revoked host", ag4.execute("get_credits", nil), 403, hosts.CodeHostRevoked)
	wantError(t, "revoked host", call(t, nil, http.MethodGet, e.api+hostagent.PathStatus+"?agent_id="+ag4.id, nil, bearer(h.jwt(nil))), 403, hosts.CodeHostRevoked)
}

func TestExecute(t *testing.T) {
	e := newEnv(t)
	w := e.owner("exec@example.com")
	h := w.createHost()
	ag := w.activeAgent(h, "validate_fax", "create_upload", "get_fax_status", "get_credits", "create_credit_checkout")

	r := ag.execute("validate_fax", map[string]any{"to": "+14155550123", "pages": 3})
	d, _ := r.body["data"].(map[string]any)
	if r.status != 200 || d["pages"] != float64(3) || d["amount"] == "" {
		t.Fatalf("validate_fax: %d %s", r.status, r.raw)
	}
	wantError(t, "unknown argument", ag.execute("validate_fax", map[string]any{"to": "+14155550123", "colour": "red"}), 400, "invalid_request")
	if r := ag.execute("validate_fax", map[string]any{"to": "+14155550123", "colour": "red"}); !strings.Contains(r.str("message"), "colour") {
		t.Fatalf("the unknown field is not named: %s", r.raw)
	}
	wantError(t, "case-folded argument", ag.execute("validate_fax", map[string]any{"TO": "+14155550123"}), 400, "invalid_request")
	wantError(t, "missing to", ag.execute("validate_fax", map[string]any{"pages": 1}), 400, "invalid_request")
	wantError(t, "pages 0", ag.execute("validate_fax", map[string]any{"to": "+14155550123", "pages": 0}), 400, "invalid_request")
	wantError(t, "unknown capability", ag.execute("teleport", nil), 404, "capability_not_found")
	wantError(t, "no capability", ag.execute("", nil), 400, "invalid_request")
	wantError(t, "not granted", ag.execute("send_fax", map[string]any{"to": "+14155550123", "document_id": "doc_1"}), 403, hosts.CodeCapabilityNotGranted)

	r = ag.execute("create_upload", map[string]any{"content_type": "application/pdf"})
	d, _ = r.body["data"].(map[string]any)
	if r.status != 200 || !strings.HasPrefix(d["upload_url"].(string), e.api) || d["method"] != "PUT" {
		t.Fatalf("create_upload: %d %s", r.status, r.raw)
	}
	r = ag.execute("get_credits", nil)
	if r.status != 200 {
		t.Fatalf("get_credits: %d %s", r.status, r.raw)
	}
	packs := e.a.Svc.Credits.Packs()
	r = ag.execute("create_credit_checkout", map[string]any{"pack": packs[0].ID})
	d, _ = r.body["data"].(map[string]any)
	if r.status != 200 || d["checkout_url"] == "" {
		t.Fatalf("checkout: %d %s", r.status, r.raw)
	}
	wantError(t, "unknown pack", ag.execute("create_credit_checkout", map[string]any{"pack": "nope"}), 400, credits.CodeUnknownPack)
	wantError(t, "unknown fax", ag.execute("get_fax_status", map[string]any{"fax_id": "fax_nope"}), 404, core.CodeNotFound)

	// The JWT's capabilities claim restricts it.
	body := map[string]any{"capability": "get_credits"}
	r = call(t, nil, http.MethodPost, e.api+hostagent.PathExecute, body, bearer(ag.jwt(map[string]any{"capabilities": []string{"validate_fax"}})))
	wantError(t, "capabilities claim", r, 403, hosts.CodeCapabilityNotGranted)
	// aud may be the execute URL (default_location).
	r = call(t, nil, http.MethodPost, e.api+hostagent.PathExecute, body, bearer(ag.jwt(map[string]any{"aud": e.api + hostagent.PathExecute})))
	if r.status != 200 {
		t.Fatalf("aud default_location: %d %s", r.status, r.raw)
	}
	// An agent JWT is single-use too.
	j := ag.jwt(nil)
	if r := call(t, nil, http.MethodPost, e.api+hostagent.PathExecute, body, bearer(j)); r.status != 200 {
		t.Fatalf("first use: %d %s", r.status, r.raw)
	}
	wantError(t, "agent jti reused", call(t, nil, http.MethodPost, e.api+hostagent.PathExecute, body, bearer(j)), 401, hosts.CodeInvalidJWT)
	// A host JWT is no agent JWT, and the host's key signs no agent JWT.
	wantError(t, "host JWT on execute", call(t, nil, http.MethodPost, e.api+hostagent.PathExecute, body, bearer(h.jwt(nil))), 401, hosts.CodeInvalidJWT)
	now := e.clock.Now()
	forged := h.key.jwt(t, "agent+jwt", map[string]any{"iss": h.id, "sub": ag.id, "aud": e.api, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": "f1"})
	wantError(t, "agent JWT signed by the host", call(t, nil, http.MethodPost, e.api+hostagent.PathExecute, body, bearer(forged)), 401, hosts.CodeInvalidJWT)
}

// Host defaults grant at once unless force_approval.
func TestDefaultCapabilities(t *testing.T) {
	e := newEnv(t)
	w := e.owner("defaults@example.com")
	h := w.createHost("get_credits")
	_, r := h.register([]string{"get_credits"}, false)
	if r.status != 200 || r.str("status") != "active" || r.body["approval"] != nil {
		t.Fatalf("pre-approved: %d %s", r.status, r.raw)
	}
	_, r = h.register([]string{"get_credits"}, true)
	if r.status != 200 || r.str("status") != "pending" {
		t.Fatalf("force_approval: %d %s", r.status, r.raw)
	}
}
