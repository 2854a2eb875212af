package core

import (
	"fmt"
	"net/url"
	"strings"
)

// Link names a page or endpoint core hands out as a URL: an upload's PUT
// target, a machine fax's status link, an inbox download, the media link a
// provider fetches, and the owner's claim, device, approval, draft and
// number pages. Its value is the name of the route that serves it, and
// Path is that route's template: the adapter registers the route with it
// and the router (wired in internal/app through Deps.Links) builds the URL
// from the name, so moving a page is one change. Without a router, in
// core's own tests, the kernel expands Path against the link's origin.
type Link string

// The links core hands out, named by their routes.
const (
	LinkUpload        Link = "rest.putUpload"
	LinkMachineStatus Link = "rest.getMachineFaxStatus"
	LinkInboxFile     Link = "rest.getInboxFile"
	LinkProviderMedia Link = "rest.getProviderMedia"
	LinkClaimPage     Link = "passkeys.claim"
	LinkDevicePage    Link = "passkeys.device"
	LinkApprovalPage  Link = "passkeys.approval"
	LinkDraftPage     Link = "passkeys.draft"
	LinkNumberPage    Link = "passkeys.number"
	LinkDashboard     Link = "passkeys.dashboard"
	// LinkWebhookPage is one webhook endpoint's console page (its
	// delivery log), named in the mail that says it was disabled.
	LinkWebhookPage Link = "passkeys.webhook"
	// LinkTestCheckout is the test-mode checkout page (internal/testcheckout).
	LinkTestCheckout Link = "testcheckout.page"
	// LinkPreviewFile and LinkFaxFile are a preview's PDF and a fax's
	// document as faxed; each has a ...Page link to one page as an image.
	// LinkFaxReport is a fax's transmission report.
	LinkPreviewFile     Link = "rest.getPreviewFile"
	LinkPreviewFilePage Link = "rest.getPreviewFilePage"
	LinkFaxFile         Link = "rest.getFaxFile"
	LinkFaxFilePage     Link = "rest.getFaxFilePage"
	LinkFaxReport       Link = "rest.getFaxReport"
	// LinkFaxPage is one sent fax's console page (its attempts, its pages
	// as faxed, its report and receipt): where the send page and any
	// door's owner-facing link to a fax lead.
	LinkFaxPage Link = "passkeys.fax"
)

// AllLinks lists every Link, for the test that finds each on the router.
func AllLinks() []Link {
	return []Link{LinkUpload, LinkMachineStatus, LinkInboxFile, LinkProviderMedia, LinkClaimPage,
		LinkDevicePage, LinkApprovalPage, LinkDraftPage, LinkNumberPage, LinkDashboard, LinkWebhookPage, LinkTestCheckout,
		LinkPreviewFile, LinkPreviewFilePage, LinkFaxFile, LinkFaxFilePage, LinkFaxReport, LinkFaxPage}
}

// Path is the route template (gorilla/mux syntax) the link's adapter
// registers.
func (l Link) Path() string {
	switch l {
	case LinkUpload:
		return "/api/v1/uploads/{token}"
	case LinkMachineStatus:
		return "/api/v1/machine/faxes/status/{token}"
	case LinkInboxFile:
		return "/api/v1/inbox/files/{token}"
	case LinkProviderMedia:
		return "/api/v1/provider-media/{token}"
	case LinkClaimPage:
		return "/agent/claim/{token}"
	case LinkDevicePage:
		return "/console/device"
	case LinkApprovalPage:
		return "/console/approvals/{id}"
	case LinkDraftPage:
		return "/console/drafts/{id}"
	case LinkNumberPage:
		return "/console/numbers/{id}"
	case LinkDashboard:
		return "/console"
	case LinkWebhookPage:
		return "/console/webhooks/{id}"
	case LinkTestCheckout:
		return "/checkout/test/{id}"
	case LinkPreviewFile:
		return "/api/v1/preview-files/{token}"
	case LinkPreviewFilePage:
		return "/api/v1/preview-files/{token}/pages/{page}"
	case LinkFaxFile:
		return "/api/v1/fax-files/{token}"
	case LinkFaxFilePage:
		return "/api/v1/fax-files/{token}/pages/{page}"
	case LinkFaxReport:
		return "/api/v1/fax-reports/{token}"
	case LinkFaxPage:
		return "/console/faxes/{id}"
	}
	return ""
}

// PathPrefix is the path up to the link's first variable ("/agent/claim/"),
// for middleware that recognises a family of secret-bearing paths.
func (l Link) PathPrefix() string {
	p, _, _ := strings.Cut(l.Path(), "{")
	return p
}

// OnAPI reports whether the link is served on the API origin (APIURL);
// the others are on the base origin (BaseURL).
func (l Link) OnAPI() bool { return strings.HasPrefix(l.Path(), "/api/") }

// Links builds absolute URLs, and paths alone, from route names: the
// router implements it.
type Links interface {
	URL(name string, pairs ...string) (string, error)
	Path(name string, pairs ...string) (string, error)
}

// URL is the absolute URL of link with its variables (name, value pairs)
// and, if query is not nil, its query string. The router builds it when
// one is wired; otherwise the link's template is expanded here.
func (s *Kernel) URL(link Link, query url.Values, pairs ...string) string {
	u, err := LinkURL(s.d.Links, s.cfg, link, query, pairs...)
	if err != nil {
		// Every link is registered (internal/app's TestCoreLinksAreRoutes):
		// a failure is a programming error, never a client's.
		panic(fmt.Sprintf("core: link %s: %v", link, err))
	}
	return u
}

// LinkURL is link's absolute URL built by links (the router) or, when
// links is nil, from its template and cfg's origins; query, if not empty,
// is its query string. Port adapters built before the kernel (the checkout
// gateways) use it with the same router.
func LinkURL(links Links, cfg Config, link Link, query url.Values, pairs ...string) (string, error) {
	var u string
	var err error
	if links != nil {
		u, err = links.URL(string(link), pairs...)
	} else {
		u, err = ExpandLink(cfg, link, pairs...)
	}
	if err != nil {
		return "", err
	}
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u, nil
}

// ExpandLink builds link's URL from its template and the configured
// origins, as the router does; each value is escaped as one path segment.
func ExpandLink(cfg Config, link Link, pairs ...string) (string, error) {
	p, err := expandLinkPath(link, pairs)
	if err != nil {
		return "", err
	}
	origin := cfg.BaseURL
	if link.OnAPI() {
		origin = cfg.APIURL
	}
	return origin + p, nil
}

func expandLinkPath(link Link, pairs []string) (string, error) {
	p := link.Path()
	if p == "" {
		return "", fmt.Errorf("unknown link %q", link)
	}
	if len(pairs)%2 != 0 {
		return "", fmt.Errorf("link %s: pairs must be name, value pairs", link)
	}
	for i := 0; i < len(pairs); i += 2 {
		v := "{" + pairs[i] + "}"
		if !strings.Contains(p, v) {
			return "", fmt.Errorf("link %s has no variable %s", link, pairs[i])
		}
		p = strings.Replace(p, v, url.PathEscape(pairs[i+1]), 1)
	}
	if strings.Contains(p, "{") {
		return "", fmt.Errorf("link %s: a variable has no value in %s", link, p)
	}
	return p, nil
}

// LinkPath is link's path alone, for a link shown relative to the origin
// the client already talks to.
func (s *Kernel) LinkPath(link Link, pairs ...string) string {
	var p string
	var err error
	if s.d.Links != nil {
		p, err = s.d.Links.Path(string(link), pairs...)
	} else {
		p, err = expandLinkPath(link, pairs)
	}
	if err != nil {
		panic(fmt.Sprintf("core: link %s: %v", link, err))
	}
	return p
}
