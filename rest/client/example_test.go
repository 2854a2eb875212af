package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/rest/client"
	"github.com/faxhub/faxhub/rest/client/api"
)

// Upload a PDF, send it with an Idempotency-Key, wait until it is
// delivered, and read a refusal's code. apiURL and key come from a
// faxhub started for the example (`faxhub admin demo` prints a test key).
func Example() {
	apiURL, key, stop := startFaxhub()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	c, err := client.New(apiURL, client.StaticToken(key))
	if err != nil {
		panic(err)
	}
	pdf := testenv.MinimalPDF(1) // your document: PDF, image, Word, Excel…
	up, err := c.Upload(ctx, strings.NewReader(string(pdf)), int64(len(pdf)), nil)
	if err != nil {
		panic(err)
	}
	fax, err := c.SendFax(ctx, client.NewIdempotencyKey(), api.SendFaxRequest{
		To:          "+12125550100", // a test number the simulator delivers to
		UploadToken: &up.UploadToken,
	})
	if err != nil {
		panic(err)
	}
	fax, err = c.WaitFax(ctx, fax.Id, client.WaitOptions{First: 50 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	fmt.Println("fax", fax.Status, "pages", fax.Pages)

	_, err = c.SendFax(ctx, "", api.SendFaxRequest{To: "+19005550123", UploadToken: &up.UploadToken})
	var refused *client.Error
	if errors.As(err, &refused) {
		fmt.Println("refused:", refused.Status, refused.Code)
	}
	// Output:
	// fax delivered pages 1
	// refused: 422 premium_rate_destination
}
