package passkeys

import (
	"net/http"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

// commonZones are offered in the time zone field's <datalist>; any other
// IANA zone may be typed (core's CheckSettings decides).
var commonZones = []string{
	"UTC",
	"America/New_York", "America/Chicago", "America/Denver", "America/Phoenix", "America/Los_Angeles",
	"America/Anchorage", "Pacific/Honolulu", "America/Toronto", "America/Vancouver", "America/Mexico_City",
	"America/Sao_Paulo", "America/Buenos_Aires", "Europe/London", "Europe/Dublin", "Europe/Lisbon",
	"Europe/Paris", "Europe/Berlin", "Europe/Madrid", "Europe/Rome", "Europe/Amsterdam", "Europe/Zurich",
	"Europe/Stockholm", "Europe/Warsaw", "Europe/Athens", "Europe/Istanbul", "Africa/Johannesburg",
	"Africa/Lagos", "Africa/Cairo", "Asia/Dubai", "Asia/Kolkata", "Asia/Singapore", "Asia/Hong_Kong",
	"Asia/Shanghai", "Asia/Tokyo", "Asia/Seoul", "Australia/Sydney", "Australia/Perth", "Pacific/Auckland",
}

// settingsField is one text field of the form: its name in core's errors
// (and the form's), its label and what it does.
type settingsField struct {
	Name, ID, Label, Help, Value, Error string
	Max                                 int
}

type faxSettingsBody struct {
	// TimeZone and Header are the form's own fields; Sender the cover
	// page's sender block.
	TimeZone settingsField
	Header   settingsField
	Sender   []settingsField
	// ApproveChatSends is the "approve every send from chat apps" box.
	ApproveChatSends bool
	Zones            []string
	// Example is the start of a page's header line with the saved
	// settings, now.
	Example string
}

// settingsPrincipal is who reads and sets the fax settings: the owner in
// the console. Settings are per owner, not per mode; the mode only fills
// the principal.
func settingsPrincipal(s *signedIn) core.Principal {
	return core.OwnerPrincipal(s.owner.ID, core.ModeLive)
}

func (c *Console) faxSettingsPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	st, err := c.svc.Faxes.GetSettings(r.Context(), settingsPrincipal(s))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	notice := ""
	if r.URL.Query().Get("saved") != "" {
		notice = "Fax settings saved. They apply to faxes composed from now on."
	}
	c.showFaxSettings(w, r, s, http.StatusOK, st, st, nil, notice)
}

// saveFaxSettings replaces the owner's fax settings with the form's (the
// same rule as PUT /api/v1/fax-settings). A refused value shows the form
// again as typed, with core's message next to the field it names, and
// saves nothing.
func (c *Console) saveFaxSettings(w http.ResponseWriter, r *http.Request, s *signedIn) {
	v := func(name string) string { return strings.TrimSpace(r.PostFormValue(name)) }
	typed := faxes.Settings{
		TimeZone: v("timeZone"),
		Header:   v("header"),
		Sender: faxes.Sender{
			Name: v("sender.name"), Company: v("sender.company"), Phone: v("sender.phone"), Fax: v("sender.fax"),
		},
		ApproveChatSends: v("approveChatSends") == "on",
	}
	if _, err := c.svc.Faxes.PutSettings(r.Context(), settingsPrincipal(s), typed); err != nil {
		e := core.AsError(err)
		if e.Kind != core.KindInvalid {
			c.fail(w, r, err)
			return
		}
		saved, gerr := c.svc.Faxes.GetSettings(r.Context(), settingsPrincipal(s))
		if gerr != nil {
			c.fail(w, r, gerr)
			return
		}
		c.showFaxSettings(w, r, s, statusOf(e.Kind), typed, saved, e, "")
		return
	}
	// Post/redirect/get: reloading the page does not post the form again.
	http.Redirect(w, r, "/console/fax-settings?saved=1", http.StatusSeeOther)
}

// showFaxSettings renders the form with the values of form, the header
// example of saved, and refused's message beside the field it names (or
// above the form when it names none the form has).
func (c *Console) showFaxSettings(w http.ResponseWriter, r *http.Request, s *signedIn, status int, form, saved faxes.Settings, refused *core.Error, notice string) {
	b := faxSettingsBody{
		TimeZone: settingsField{Name: "timeZone", ID: "fs-timezone", Label: "Time zone", Value: form.TimeZone},
		Header: settingsField{Name: "header", ID: "fs-header", Label: "Header text", Value: form.Header, Max: faxes.MaxHeader,
			Help: "Printed at the top of every page between the date and the sending number, as a fax machine does. Empty: your sender name below. A fax's own header option overrides it."},
		Sender: []settingsField{
			{Name: "sender.name", ID: "fs-sender-name", Label: "Name", Value: form.Sender.Name, Max: faxes.MaxCoverField},
			{Name: "sender.company", ID: "fs-sender-company", Label: "Company", Value: form.Sender.Company, Max: faxes.MaxCoverField},
			{Name: "sender.phone", ID: "fs-sender-phone", Label: "Phone", Value: form.Sender.Phone, Max: faxes.MaxCoverField},
			{Name: "sender.fax", ID: "fs-sender-fax", Label: "Fax", Value: form.Sender.Fax, Max: faxes.MaxCoverField},
		},
		ApproveChatSends: form.ApproveChatSends,
		Zones:            commonZones,
		Example:          headerExample(saved, c.now()),
	}
	d := c.page(s, "Fax settings", "faxsettings", nil)
	d.Notice = notice
	if refused != nil {
		field, _ := refused.Fields["field"].(string)
		placed := false
		for _, f := range append([]*settingsField{&b.TimeZone, &b.Header}, ptrs(b.Sender)...) {
			if f.Name == field {
				f.Error, placed = refused.Message, true
			}
		}
		d.ErrorTitle, d.Error = "Nothing was saved", "correct the field marked below and save again."
		if !placed {
			d.Error = refused.Message
		}
	}
	d.Body = b
	c.render(w, r, status, "faxsettings", d)
}

func ptrs(fs []settingsField) []*settingsField {
	out := make([]*settingsField, len(fs))
	for i := range fs {
		out[i] = &fs[i]
	}
	return out
}

// exampleNumber stands for the sending number in the header example.
const exampleNumber = "+1 212-555-0100"

// headerExample is how the header line of page 1 of 3 of a fax sent at
// at would read with st (core/faxdoc draws it: date and time in the
// settings' zone, the header text or else the sender name, the sending
// number, the page), so the owner sees what the fields do.
func headerExample(st faxes.Settings, at time.Time) string {
	parts := []string{at.In(st.Location()).Format("2006-01-02 15:04 MST")}
	text := strings.TrimSpace(st.Header)
	if text == "" {
		text = strings.TrimSpace(st.Sender.Name)
	}
	if text != "" {
		parts = append(parts, text)
	}
	return strings.Join(append(parts, exampleNumber, "Page 1/3"), "   ")
}
