package passkeys

import (
	"strings"

	"net/http"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

// The draft checkout page: where the owner reviews and pays for exactly one
// fax a chat app drafted (the checkoutUrl of the MCP create_fax_draft tool).
// It needs the owner's session, so a leaked link shows nothing to anyone
// else. Paying starts the mode's hosted checkout (test: faxhub's test card
// page; live: Stripe Checkout once configured), and completing it queues
// the fax.

type draftBody struct {
	Draft   *faxes.DraftView
	Price   string
	Payable bool
	// Pages are the draft's pages as they will be faxed (a preview), or
	// why they cannot be shown; shown while it can still be paid.
	Pages *pagesView
}

// ownerDraft finds one of the owner's drafts in the mode the link names, or
// in either mode.
func (c *Console) ownerDraft(r *http.Request, s *signedIn) (*faxes.DraftView, error) {
	modes := []core.Mode{core.ModeTest, core.ModeLive}
	if m := r.URL.Query().Get("mode"); m != "" {
		pm, err := core.ParseMode(m)
		if err != nil {
			return nil, err
		}
		modes = []core.Mode{pm}
	}
	var err error
	for _, m := range modes {
		var d *faxes.DraftView
		d, err = c.svc.Faxes.GetDraft(r.Context(), core.OwnerPrincipal(s.owner.ID, m), r.PathValue("id"))
		if err == nil {
			return d, nil
		}
		if core.ErrorKind(err) != core.KindNotFound {
			return nil, err
		}
	}
	return nil, err
}

func (c *Console) draftPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	d, err := c.ownerDraft(r, s)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	b := draftBody{Draft: d, Price: "$" + d.Quote.Amount + " " + strings.ToUpper(d.Quote.Currency), Payable: d.Status == faxes.DraftOpen}
	if b.Payable {
		pv, err := c.svc.Faxes.PreviewDraft(r.Context(), core.OwnerPrincipal(s.owner.ID, d.Mode), d.ID)
		b.Pages = previewPages(pv, err)
	}
	c.render(w, r, http.StatusOK, "draft", c.page(s, "Pay for a fax", "", b))
}

func (c *Console) payDraft(w http.ResponseWriter, r *http.Request, s *signedIn) {
	d, err := c.ownerDraft(r, s)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if d.Status == faxes.DraftPaid {
		http.Redirect(w, r, "/console/drafts/"+d.ID+"?mode="+string(d.Mode), http.StatusSeeOther)
		return
	}
	cs, err := c.svc.Checkout.StartDraft(r.Context(), core.OwnerPrincipal(s.owner.ID, d.Mode), d.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, cs.CheckoutURL, http.StatusSeeOther)
}
