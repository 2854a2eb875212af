package a2a

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/tasks"
)

// The one core → A2A error mapping.
func TestToA2AError(t *testing.T) {
	scope := core.Errorf(core.KindForbidden, core.CodeInsufficientScope, "this credential lacks the fax:draft scope").With("required_scope", "fax:draft")
	for _, c := range []struct {
		name     string
		err      error
		target   errorTarget
		sentinel error
		code     string
		msg      string
	}{
		{"invalid", core.Errorf(core.KindInvalid, core.CodeInvalidDestination, "bad number"), targetSkill, a2a.ErrInvalidParams, core.CodeInvalidDestination, "invalid_destination: bad number"},
		{"unprocessable", core.Errorf(core.KindUnprocessable, documents.CodeTooManyPages, "too many"), targetSkill, a2a.ErrInvalidParams, documents.CodeTooManyPages, "too many"},
		{"too large", core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge, "big"), targetSkill, a2a.ErrInvalidParams, documents.CodeFileTooLarge, "big"},
		{"conflict", core.Errorf(core.KindConflict, tasks.CodeMandateReplayed, "used"), targetTask, a2a.ErrInvalidParams, tasks.CodeMandateReplayed, "used"},
		{"not cancelable", core.Errorf(core.KindConflict, tasks.CodeNotCancelable, "sending"), targetTask, a2a.ErrTaskNotCancelable, tasks.CodeNotCancelable, "sending"},
		{"gone", core.Errorf(core.KindGone, tasks.CodeCartExpired, "expired"), targetTask, a2a.ErrInvalidParams, tasks.CodeCartExpired, "expired"},
		{"payment required", core.Errorf(core.KindPaymentRequired, credits.CodeInsufficientCredits, "poor"), targetSkill, a2a.ErrInvalidParams, credits.CodeInsufficientCredits, "poor"},
		{"a missing fax", core.Errorf(core.KindNotFound, core.CodeNotFound, "fax not found"), targetSkill, a2a.ErrInvalidParams, core.CodeNotFound, "fax not found"},
		{"a missing task", core.Errorf(core.KindNotFound, core.CodeNotFound, "task not found"), targetTask, a2a.ErrTaskNotFound, core.CodeNotFound, "task not found"},
		{"unsupported media", core.Errorf(core.KindUnsupportedMedia, documents.CodeUnsupportedType, "no"), targetSkill, a2a.ErrUnsupportedContentType, documents.CodeUnsupportedType, "no"},
		{"unauthenticated", core.Errorf(core.KindUnauthenticated, core.CodeUnauthenticated, "who"), targetSkill, a2a.ErrUnauthenticated, core.CodeUnauthenticated, "who"},
		{"scope", scope, targetSkill, a2a.ErrUnauthorized, core.CodeInsufficientScope, "authorize this agent again with the fax:draft scope"},
		{"forbidden, not a scope", core.Errorf(core.KindForbidden, documents.CodeUploadInvalid, "bad token"), targetSkill, a2a.ErrInvalidParams, documents.CodeUploadInvalid, "bad token"},
		{"unavailable", core.Errorf(core.KindUnavailable, faxes.CodeProviderUnavailable, "no provider"), targetSkill, a2a.ErrUnsupportedOperation, faxes.CodeProviderUnavailable, "no provider"},
		{"rate limited", core.Errorf(core.KindRateLimited, core.CodeRateLimited, "slow").WithRetryAfter(3), targetSkill, a2a.ErrServerError, core.CodeRateLimited, "slow"},
		{"internal", fmt.Errorf("select: %w", errors.New("disk on fire")), targetSkill, a2a.ErrInternalError, core.CodeInternal, "something went wrong"},
		{"wrapped", fmt.Errorf("quote: %w", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "x")), targetSkill, a2a.ErrInvalidParams, core.CodeInvalidRequest, "x"},
	} {
		e := toA2AError(c.err, c.target)
		if !errors.Is(e, c.sentinel) || e.Details["code"] != c.code || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%s: %v %v %q, want %v %s %q", c.name, e.Err, e.Details, e.Message, c.sentinel, c.code, c.msg)
		}
		if strings.Contains(e.Message, "disk on fire") {
			t.Errorf("%s: internal text leaked: %q", c.name, e.Message)
		}
	}
	e := toA2AError(scope, targetSkill)
	if e.Details["required_scope"] != "fax:draft" {
		t.Errorf("scope details %v", e.Details)
	}
	if e := toA2AError(core.Errorf(core.KindRateLimited, core.CodeRateLimited, "slow").WithRetryAfter(3), targetSkill); e.Details["retryAfterSeconds"] != 3 {
		t.Errorf("retry details %v", e.Details)
	}
}

// Each skill's argument struct and its schema name the same arguments, its
// required ones exist, and its scope is a real one.
func TestSkillTable(t *testing.T) {
	packs := []core.CreditPack{{ID: "pack_10", Price: "10.00", Credit: "10.00"}}
	seen := map[string]bool{}
	for _, s := range skillTable(packs) {
		if seen[s.ID] {
			t.Errorf("skill %s twice", s.ID)
		}
		seen[s.ID] = true
		if core.ScopeFor(s.Op) == "" {
			t.Errorf("%s: operation %q has no scope", s.ID, s.Op)
		}
		props, _ := s.Schema["properties"].(map[string]any)
		var schemaNames []string
		for k := range props {
			schemaNames = append(schemaNames, k)
		}
		sort.Strings(schemaNames)
		var fieldNames []string
		typ := reflect.TypeOf(s.newArgs()).Elem()
		for i := range typ.NumField() {
			fieldNames = append(fieldNames, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
		}
		sort.Strings(fieldNames)
		if !slices.Equal(schemaNames, fieldNames) {
			t.Errorf("%s: schema %v, struct %v", s.ID, schemaNames, fieldNames)
		}
		if req, ok := s.Schema["required"].([]string); ok {
			for _, r := range req {
				if !slices.Contains(schemaNames, r) {
					t.Errorf("%s: required %s is no property", s.ID, r)
				}
			}
		}
		if s.Schema["additionalProperties"] != false {
			t.Errorf("%s: the schema allows unknown arguments", s.ID)
		}
	}
}

func TestDecodeArgs(t *testing.T) {
	table := skillTable(nil)
	sk := func(id string) skill {
		for _, s := range table {
			if s.ID == id {
				return s
			}
		}
		t.Fatalf("no skill %s", id)
		return skill{}
	}
	got, err := decodeArgs(sk("create_fax"), map[string]any{"to": "+1", "uploadToken": "u", "cover": true, "coverText": "hi"})
	if err != nil || *got.(*createFaxArgs) != (createFaxArgs{To: "+1", UploadToken: "u", Cover: true, CoverText: "hi"}) {
		t.Fatalf("create_fax: %+v %v", got, err)
	}
	if got, err := decodeArgs(sk("get_credits"), nil); err != nil || got.(*noArgs) == nil {
		t.Fatalf("no arguments: %v", err)
	}
	for _, c := range []struct {
		skill string
		args  any
		field string
	}{
		{"create_fax", map[string]any{"to": "+1"}, "uploadToken"},
		{"create_fax", map[string]any{"to": "+1", "uploadToken": ""}, "uploadToken"},
		{"create_fax", map[string]any{"to": "+1", "uploadToken": "u", "cover": "yes"}, "cover"},
		{"list_faxes", map[string]any{"limit": 1.5}, "limit"},
		{"list_faxes", map[string]any{"LIMIT": 1}, "LIMIT"},
		{"get_fax", "fax_1", "arguments"},
	} {
		_, err := decodeArgs(sk(c.skill), c.args)
		var e *a2a.Error
		if !errors.As(err, &e) || !errors.Is(err, a2a.ErrInvalidParams) || e.Details["field"] != c.field {
			t.Errorf("%s %v: %v, want the field %s named", c.skill, c.args, err, c.field)
		}
	}
}

func TestVersionSupported(t *testing.T) {
	for _, c := range []struct {
		v  []string
		ok bool
	}{{nil, true}, {[]string{""}, true}, {[]string{"0.3"}, true}, {[]string{" 1.0 "}, true}, {[]string{"1.1"}, false}, {[]string{"0.3", "1.0"}, false}} {
		if versionSupported(c.v) != c.ok {
			t.Errorf("%q: %v", c.v, !c.ok)
		}
	}
}
