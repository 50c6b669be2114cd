// dashboard-check validates Grafana dashboards (classic JSON model) with the Grafana Foundation
// SDK's strict decoder: unknown fields, wrong types and missing required fields anywhere in the
// dashboard, its panels' options and field configs (per panel type) and its Prometheus targets
// are errors, then the SDK's own Validate runs. okp's tests run it on
// contrib/monitoring/dashboard.json (tests/it/monitoring.rs); scripts/setup.sh builds it.
//
// Not here: PromQL (promtool checks the queries), okp's own rules for its dashboard (ids,
// descriptions: the Rust test).
//
// Usage: dashboard-check FILE...; exit 0 when every file is valid, 1 when one is not, 2 on usage.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

const sdk = "github.com/grafana/grafana-foundation-sdk/go"

func sdkVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == sdk {
				return m.Version
			}
		}
	}
	return "unknown"
}

func check(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var d dashboard.Dashboard
	if err := orNil(d.UnmarshalJSONStrict(raw)); err != nil {
		return err
	}
	return orNil(d.Validate())
}

// orNil turns the SDK's empty error list into no error: its strict decoder returns its
// cog.BuildErrors even when the list is empty, a non-nil error that says nothing.
func orNil(err error) error {
	var list cog.BuildErrors
	if errors.As(err, &list) && len(list) == 0 {
		return nil
	}
	return err
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Printf("dashboard-check (grafana-foundation-sdk %s)\n", sdkVersion())
		return
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dashboard-check FILE... | --version")
		os.Exit(2)
	}
	// Panel options, field configs and queries are checked per plugin only once registered.
	plugins.RegisterDefaultPlugins()
	failed := false
	for _, path := range os.Args[1:] {
		if err := check(path); err != nil {
			fmt.Fprintf(os.Stderr, "%s: invalid dashboard:\n%v\n", path, err)
			failed = true
		} else {
			fmt.Printf("%s: valid\n", path)
		}
	}
	if failed {
		os.Exit(1)
	}
}
