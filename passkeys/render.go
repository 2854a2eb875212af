package passkeys

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/web"
)

// pageData is what every page template gets; Body is the page's own data.
type pageData struct {
	Title      string
	Owner      *accounts.Owner
	CSRF       string
	Nav        string
	Pending    int
	Error      string
	ErrorTitle string
	Notice     string
	DevMailbox bool
	Body       any
}

var pageNames = []string{"error", "signup", "recover", "verify", "signin", "mailbox", "dashboard", "keys", "apps", "approvals", "approval", "account", "draft", "agents", "agentclaim", "hosts", "device", "numbers", "number", "inbox", "inboxfax", "webhooks", "webhook", "faxsettings", "send", "faxes", "fax"}

func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{"iso": isoTime, "when": humanTime, "linkify": linkify, "door": doorLabel,
		"docSummary": documentSummary, "textField": textField, "upper": strings.ToUpper, "inc": func(i int) int { return i + 1 }}
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_approval.html", "templates/_webhook.html", "templates/_pages.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("passkeys: parse template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

func timeOf(v any) (time.Time, bool) {
	switch t := v.(type) {
	case time.Time:
		return t, !t.IsZero()
	case *time.Time:
		if t != nil {
			return *t, !t.IsZero()
		}
	}
	return time.Time{}, false
}

func isoTime(v any) string {
	t, ok := timeOf(v)
	if !ok {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func humanTime(v any) string {
	t, ok := timeOf(v)
	if !ok {
		return ""
	}
	return t.UTC().Format("2 Jan 2006, 15:04 UTC")
}

var urlPattern = regexp.MustCompile(`https?://[^\s<>"']+`)

// linkify escapes text and makes its http(s) URLs clickable (the dev
// mailbox's verification links).
func linkify(text string) template.HTML {
	var b strings.Builder
	last := 0
	for _, m := range urlPattern.FindAllStringIndex(text, -1) {
		b.WriteString(template.HTMLEscapeString(text[last:m[0]]))
		u := template.HTMLEscapeString(text[m[0]:m[1]])
		b.WriteString(`<a href="` + u + `">` + u + `</a>`)
		last = m[1]
	}
	b.WriteString(template.HTMLEscapeString(text[last:]))
	return template.HTML(b.String())
}

// render executes a page fully before writing, so a template error becomes
// a clean 500 instead of half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, d pageData) {
	d.DevMailbox = c.opts.DevMailbox
	if d.Owner == nil {
		// Pages reached signed in or out show the signed-in chrome when
		// there is a session.
		if s, _ := c.currentSession(r); s != nil {
			d.Owner, d.CSRF = s.owner, s.csrf
		}
	}
	if d.Owner != nil && d.Pending == 0 {
		if ps, err := c.svc.Approvals.ListPending(r.Context(), d.Owner.ID); err == nil {
			d.Pending = len(ps)
		}
	}
	var buf bytes.Buffer
	t := c.pages[name]
	if t == nil {
		t = c.pages["error"]
	}
	if err := t.ExecuteTemplate(&buf, "layout", d); err != nil {
		c.log.ErrorContext(r.Context(), "render page", "page", name, "err", err)
		http.Error(w, "the page could not be shown", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func statusOf(k core.Kind) int { return web.Status(k) }

func writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	p := web.ProblemFor(err)
	p.Instance = r.URL.Path
	web.WriteProblem(w, p)
}
