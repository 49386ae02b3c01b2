// Checks Grafana dashboards against Grafana's dashboard schema, as Grafana's Foundation SDK
// (Apache-2.0, generated from the schemas Grafana itself is built from) decodes it: strictly
// (unknown fields, wrong types and missing required fields are errors), every panel and
// query through its plugin's own schema, then the schema's constraints.
// Usage: go run . DASHBOARD.json...
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

func main() {
	plugins.RegisterDefaultPlugins()
	failed := false
	for _, path := range os.Args[1:] {
		raw, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			failed = true
			continue
		}
		var d dashboard.Dashboard
		if err := orNil(d.UnmarshalJSONStrict(raw)); err != nil {
			fmt.Fprintf(os.Stderr, "%s: not a dashboard by Grafana's schema: %v\n", path, err)
			failed = true
			continue
		}
		if err := orNil(d.Validate()); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			failed = true
			continue
		}
		fmt.Printf("%s: a valid dashboard (%d panels)\n", path, len(d.Panels))
	}
	if failed || len(os.Args) < 2 {
		os.Exit(1)
	}
}

// orNil: the SDK returns an empty cog.BuildErrors (a typed nil in a non-nil error) for
// "no error".
func orNil(err error) error {
	var be cog.BuildErrors
	if errors.As(err, &be) && len(be) == 0 {
		return nil
	}
	return err
}
