package documents_test

import "context"

var ctx = context.Background()
