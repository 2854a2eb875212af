package hosts_test

import (
	"slices"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/internal/testenv"
)

// The agent JWT's capabilities claim is part of the principal: core.Authorize
// alone refuses what the claim leaves out, and AuthorizeCapability reports it
// with the protocol's code.
func TestPrincipalJWTCapabilities(t *testing.T) {
	e, _ := testenv.Clocked(t)
	h := newHost(t, e)
	a := approveAgent(t, e, h, hosts.CapValidateFax, hosts.CapCreateUpload, hosts.CapGetCredits, hosts.CapListInbox)
	for _, tc := range []struct {
		name    string
		claim   []string
		scopes  []core.Scope
		allowed []hosts.Capability
		// ops core.Authorize must accept beyond the capabilities' own.
		alsoOps []core.Operation
	}{
		{"no claim: every granted capability", nil,
			[]core.Scope{core.ScopeFaxDraft, core.ScopeCreditsRead, core.ScopeInboxRead},
			[]hosts.Capability{hosts.CapValidateFax, hosts.CapCreateUpload, hosts.CapGetCredits, hosts.CapListInbox}, []core.Operation{core.OpGetDocument}},
		{"claim narrows", []string{"get_credits"}, []core.Scope{core.ScopeCreditsRead}, []hosts.Capability{hosts.CapGetCredits}, nil},
		// validate_fax and create_upload share fax:draft: the scope alone
		// would let a validate_fax JWT create uploads.
		{"claim narrows within a scope", []string{"validate_fax"}, []core.Scope{core.ScopeFaxDraft}, []hosts.Capability{hosts.CapValidateFax}, []core.Operation{core.OpGetDocument}},
		{"claim never adds what was not granted", []string{"get_credits", "send_fax", "read_inbox_fax"}, []core.Scope{core.ScopeCreditsRead}, []hosts.Capability{hosts.CapGetCredits}, nil},
		{"unknown names add nothing", []string{"teleport", "list_inbox"}, []core.Scope{core.ScopeInboxRead}, []hosts.Capability{hosts.CapListInbox}, nil},
		{"an empty claim allows nothing", []string{}, []core.Scope{}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := e.Svc.Hosts.Principal(h, a, tc.claim)
			if p.Kind != core.PrincipalDelegated || p.OwnerID != e.OwnerA.ID || !slices.Equal(p.Scopes, tc.scopes) {
				t.Fatalf("principal = %+v, want scopes %v", p, tc.scopes)
			}
			for _, c := range hosts.Capabilities() {
				op, _ := hosts.CapabilityOperation(c)
				err := core.Authorize(p, op)
				capErr := hosts.AuthorizeCapability(p, a, c)
				if slices.Contains(tc.allowed, c) {
					if err != nil || capErr != nil {
						t.Errorf("%s: refused: %v / %v", c, err, capErr)
					}
					continue
				}
				testenv.WantCode(t, err, core.CodeInsufficientScope)
				testenv.WantCode(t, capErr, hosts.CodeCapabilityNotGranted)
				if core.ErrorKind(capErr) != core.KindForbidden {
					t.Errorf("%s: kind %v", c, core.ErrorKind(capErr))
				}
			}
			for _, op := range tc.alsoOps {
				if err := core.Authorize(p, op); err != nil {
					t.Errorf("%s: %v", op, err)
				}
			}
			// Operations no capability performs stay refused.
			for _, op := range []core.Operation{core.OpSendFax, core.OpListFaxes, core.OpBuyNumber} {
				testenv.WantCode(t, core.Authorize(p, op), core.CodeInsufficientScope)
			}
		})
	}
}
