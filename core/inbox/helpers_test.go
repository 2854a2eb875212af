package inbox_test

import "context"

var ctx = context.Background()
