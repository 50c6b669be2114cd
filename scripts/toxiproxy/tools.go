//go:build tools

// The delay of okp's WAN link (src/hosts/wan.rs) is Toxiproxy's server, built from the module
// version go.mod pins (its go.sum holds the checksums). This file only names the package for
// `go mod tidy`; scripts/setup.sh builds it with `go build`.
package tools

import _ "github.com/Shopify/toxiproxy/v2/cmd/server"
