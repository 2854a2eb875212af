package machine_test

import "context"

var ctx = context.Background()
