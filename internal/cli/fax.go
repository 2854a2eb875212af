package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faxhub/faxhub/rest/client/api"
)

func (s *state) faxCmd() *cobra.Command {
	c := group("fax", "send faxes and follow them")
	c.AddCommand(s.faxSendCmd(), s.faxStatusCmd(), s.faxListCmd(), s.faxCancelCmd(), s.faxReceiptCmd(), s.faxReportCmd())
	return c
}

// sendFlags are fax send's options beyond the files and the number.
type sendFlags struct {
	to, at, header, resolution, key, from string
	cover                                 bool
	coverPage                             map[string]*string
	watch                                 bool
}

// coverFields are the --cover-… flags, by the API's field name.
var coverFields = []struct{ flag, usage string }{
	{"subject", "the cover page's subject"},
	{"message", "the cover page's message"},
	{"recipient-name", "the recipient's name"},
	{"recipient-company", "the recipient's company"},
	{"sender-name", "the sender's name (default: your fax settings)"},
	{"sender-company", "the sender's company"},
	{"sender-phone", "the sender's phone"},
	{"sender-fax", "the sender's fax number"},
}

func (s *state) faxSendCmd() *cobra.Command {
	f := sendFlags{coverPage: map[string]*string{}}
	c := &cobra.Command{
		Use:   "send FILE… --to NUMBER",
		Short: "upload a document and send it as a fax",
		Long: `send uploads FILE (PDF, image, Word, Excel…; several PDFs are joined into one) and sends it to
--to (E.164, e.g. +12125550100). Sending spends credits of the key's mode; each send carries an
Idempotency-Key (--idempotency-key to choose it: a retried command with the same key never sends
twice; it is refused with idempotency_conflict when the first try got through).
--watch follows the fax until it is delivered or fails; it exits 4 when it ends undelivered.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			return s.sendFax(ctxOf(cmd.Context()), files, f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.to, "to", "", "the destination fax number, E.164 (required)")
	fl.StringVar(&f.from, "from", "", "the sending number (one of your numbers)")
	fl.StringVar(&f.at, "at", "", "send later, at this time (RFC 3339, e.g. 2026-12-01T09:00:00Z)")
	fl.StringVar(&f.header, "header", "", "the header line printed at the top of each page")
	fl.StringVar(&f.resolution, "resolution", "", "standard or fine")
	fl.BoolVar(&f.cover, "cover", false, "add a cover page with your sender fields")
	for _, cf := range coverFields {
		f.coverPage[cf.flag] = fl.String("cover-"+cf.flag, "", cf.usage+" (adds a cover page)")
	}
	fl.StringVar(&f.key, "idempotency-key", "", "the send's Idempotency-Key (default: a fresh random one)")
	fl.BoolVar(&f.watch, "watch", false, "follow the fax until it is delivered or fails")
	_ = c.MarkFlagRequired("to")
	return c
}

func (s *state) faxStatusCmd() *cobra.Command {
	var watch bool
	c := &cobra.Command{
		Use:   "status FAX_ID",
		Short: "show a fax (--watch: follow it until it ends)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			if watch {
				return s.watch(ctxOf(cmd.Context()), sdk, args[0])
			}
			res, err := sdk.API().GetFaxWithResponse(ctxOf(cmd.Context()), args[0])
			if err != nil {
				return err
			}
			return s.answer(res.HTTPResponse, res.Body, nil, func(w io.Writer) { printFax(w, res.JSON200) })
		},
	}
	c.Flags().BoolVar(&watch, "watch", false, "follow the fax until it is delivered or fails")
	return c
}

func (s *state) faxListCmd() *cobra.Command {
	var limit int
	var status, after string
	c := &cobra.Command{
		Use:   "list",
		Short: "list faxes, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			p := &api.ListFaxesParams{Limit: &limit}
			if status != "" {
				st := api.ListFaxesParamsStatus(status)
				p.Status = &st
			}
			if after != "" {
				p.StartingAfter = &after
			}
			res, err := sdk.API().ListFaxesWithResponse(ctxOf(cmd.Context()), p)
			if err != nil {
				return err
			}
			return s.answer(res.HTTPResponse, res.Body, nil, func(w io.Writer) {
				rows := [][]string{}
				for _, f := range res.JSON200.Data {
					rows = append(rows, []string{f.Id, string(f.Status), f.To, strconv.Itoa(f.Pages), f.Price + " " + strings.ToUpper(string(f.Currency)), f.CreatedAt.UTC().Format(time.RFC3339)})
				}
				table(w, []string{"ID", "STATUS", "TO", "PAGES", "PRICE", "CREATED"}, rows)
				more(w, res.JSON200.HasMore, res.JSON200.NextCursor)
			})
		},
	}
	c.Flags().IntVar(&limit, "limit", 20, "page size, 1 to 100")
	c.Flags().StringVar(&status, "status", "", "only faxes in this status")
	c.Flags().StringVar(&after, "starting-after", "", "the page after this fax id (the previous page's cursor)")
	return c
}

func (s *state) faxCancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel FAX_ID",
		Short: "cancel a queued or scheduled fax (its credits are released)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			res, err := sdk.API().CancelFaxWithResponse(ctxOf(cmd.Context()), args[0])
			if err != nil {
				return err
			}
			return s.answer(res.HTTPResponse, res.Body, nil, func(w io.Writer) { printFax(w, res.JSON200) })
		},
	}
}

func (s *state) faxReceiptCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "receipt FAX_ID",
		Short: "print a delivered fax's signed receipt (verify it with faxhub receipt verify)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			res, err := sdk.API().GetFaxReceiptWithResponse(ctxOf(cmd.Context()), args[0])
			if err != nil {
				return err
			}
			return s.answer(res.HTTPResponse, res.Body, nil, func(w io.Writer) { fmt.Fprintln(w, res.JSON200.Receipt) })
		},
	}
}

func (s *state) faxReportCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "report FAX_ID [-o FILE]",
		Short: "download a fax's transmission report (PDF)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			ctx := ctxOf(cmd.Context())
			res, err := sdk.API().GetFaxReportLink(ctx, args[0])
			return s.saveLink(ctx, res, err, cmpOr(out, args[0]+"-report.pdf"))
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", `where to write the PDF ("-": stdout; default FAX_ID-report.pdf)`)
	return c
}

func printFax(w io.Writer, f *api.Fax) {
	fmt.Fprintf(w, "%s  %s  to %s  %d page(s)  %s %s\n", f.Id, f.Status, f.To, f.Pages, f.Price, strings.ToUpper(string(f.Currency)))
	if f.SendAt != nil {
		fmt.Fprintf(w, "  scheduled for %s\n", when(f.SendAt))
	}
	if f.FailureReason != nil {
		fmt.Fprintf(w, "  %s: %s\n", str(f.FailureCode), *f.FailureReason)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
