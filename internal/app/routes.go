package app

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/faxhub/faxhub/core/web"
)

// WriteRoutes prints routes as `faxhub routes` shows them: one line per
// route, by path (the metrics listener's last), with its methods, the host
// and origin its URLs are built on, its name, the adapter that registered
// it and the credential it expects. A subtree route's path ends in "/*".
func WriteRoutes(w io.Writer, routes []web.RouteInfo) error {
	routes = slices.Clone(routes)
	slices.SortStableFunc(routes, func(a, b web.RouteInfo) int {
		return cmp.Or(
			cmp.Compare(boolInt(a.Origin == web.OriginMetrics), boolInt(b.Origin == web.OriginMetrics)),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Methods, b.Methods),
		)
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "METHOD\tHOST\tORIGIN\tPATH\tNAME\tADAPTER\tAUTH")
	for _, rt := range routes {
		path := rt.Path
		if rt.Prefix {
			path += "*"
		}
		origin := string(rt.Origin)
		if rt.Origin == web.OriginMetrics {
			origin += " (listener)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			strings.Join(rt.MethodList(), ","), rt.Host, origin, path, rt.Name, rt.Adapter, rt.Auth)
	}
	return tw.Flush()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
