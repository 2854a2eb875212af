package cli

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/faxhub/faxhub/rest/client/api"
)

func (s *state) inboxCmd() *cobra.Command {
	c := group("inbox", "faxes received on your numbers")
	var limit int
	var after, number string
	list := &cobra.Command{
		Use:   "list",
		Short: "list received faxes, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			p := &api.ListInboxParams{Limit: &limit}
			if after != "" {
				p.StartingAfter = &after
			}
			if number != "" {
				p.NumberId = &number
			}
			res, err := sdk.API().ListInboxWithResponse(ctxOf(cmd.Context()), p)
			if err != nil {
				return err
			}
			return s.answer(res.HTTPResponse, res.Body, nil, func(w io.Writer) {
				rows := [][]string{}
				for _, f := range res.JSON200.Data {
					read := "unread"
					if f.ReadAt != nil {
						read = "read"
					}
					rows = append(rows, []string{f.Id, string(f.Status), read, f.From, f.To, strconv.Itoa(f.Pages), f.ReceivedAt.UTC().Format(time.RFC3339)})
				}
				table(w, []string{"ID", "STATUS", "READ", "FROM", "TO", "PAGES", "RECEIVED"}, rows)
				more(w, res.JSON200.HasMore, res.JSON200.NextCursor)
			})
		},
	}
	list.Flags().IntVar(&limit, "limit", 20, "page size, 1 to 100")
	list.Flags().StringVar(&after, "starting-after", "", "the page after this fax id")
	list.Flags().StringVar(&number, "number", "", "only faxes received on this number (num_…)")

	read := &cobra.Command{
		Use:   "read INBOUND_ID",
		Short: "show a received fax and its text",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			res, err := sdk.API().GetInboxFaxWithResponse(ctxOf(cmd.Context()), args[0])
			if err != nil {
				return err
			}
			return s.answer(res.HTTPResponse, res.Body, nil, func(w io.Writer) {
				f := res.JSON200
				fmt.Fprintf(w, "%s  %s  from %s  to %s  %d page(s)  received %s\n", f.Id, f.Status, f.From, f.To, f.Pages, f.ReceivedAt.UTC().Format(time.RFC3339))
				if f.Text != nil {
					fmt.Fprintf(w, "\n%s\n", *f.Text)
				}
			})
		},
	}

	var out string
	download := &cobra.Command{
		Use:   "download INBOUND_ID [-o FILE]",
		Short: "download a received fax (PDF); marks it read",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			ctx := ctxOf(cmd.Context())
			res, err := sdk.API().DownloadInboxFax(ctx, args[0])
			return s.saveLink(ctx, res, err, cmpOr(out, args[0]+".pdf"))
		},
	}
	download.Flags().StringVarP(&out, "output", "o", "", `where to write the PDF ("-": stdout; default INBOUND_ID.pdf)`)
	c.AddCommand(list, read, download)
	return c
}
