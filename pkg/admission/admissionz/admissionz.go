// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package admissionz serves /admissionz, in the style of upstream's z-pages
// (/flagz, /statusz): the admission chain as it runs now, in order, with
// each plugin's phases, whether it is on by default, whether a reload can
// change it, where its configuration came from with its hash, and how the
// last reload of the configuration file went. Text for people; JSON when
// the request accepts application/json. The path goes through the
// apiserver's authentication and authorization like any other
// non-resource URL, so only users granted `get` on /admissionz read it.
package admissionz

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/turnstile-k8s/turnstile/pkg/admission/reload"
)

// Path is where the page is served.
const Path = "/admissionz"

// Report is the page's JSON form.
type Report struct {
	// ConfigFile is --admission-control-config-file, empty when none is set,
	// and ConfigHash the sha256 of the configuration in force.
	ConfigFile string `json:"configFile,omitempty"`
	ConfigHash string `json:"configHash,omitempty"`
	// LastReload is the last reload tried, absent before the first.
	LastReload *Reload `json:"lastReload,omitempty"`
	// Plugins is the chain in the order it runs.
	Plugins []Plugin `json:"plugins"`
}

// Reload is how a reload went.
type Reload struct {
	Time   time.Time `json:"time"`
	Result string    `json:"result"` // success or failure
	Error  string    `json:"error,omitempty"`
}

// Plugin is one plugin of the chain.
type Plugin struct {
	Position   int      `json:"position"`
	Name       string   `json:"name"`
	Phases     []string `json:"phases"`
	DefaultOn  bool     `json:"defaultOn"`
	Reloadable bool     `json:"reloadable"`
	// Config is where the configuration came from: "path <file>",
	// "inline" or "none"; ConfigSHA256 the hash of what the plugin got.
	Config       string `json:"config"`
	ConfigSHA256 string `json:"configSHA256,omitempty"`
}

// Handler serves the page for chain, whose configuration controller
// reloads (nil when there is no configuration file). defaultOff are the
// plugins that are off unless enabled.
func Handler(chain *reload.Chain, controller *reload.Controller, defaultOff sets.Set[string]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		report := build(chain, controller, defaultOff)
		if strings.Contains(r.Header.Get("Accept"), "application/json") {
			w.Header().Set("Content-Type", "application/json")
			e := json.NewEncoder(w)
			e.SetIndent("", "  ")
			_ = e.Encode(report)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_ = writeText(w, report)
	})
}

func build(chain *reload.Chain, controller *reload.Controller, defaultOff sets.Set[string]) Report {
	var status reload.Status
	if controller != nil {
		status = controller.Status()
	}
	report := Report{ConfigFile: status.File, ConfigHash: status.Hash}
	if !status.LastReload.IsZero() {
		report.LastReload = &Reload{Time: status.LastReload.UTC(), Result: "success"}
		if status.LastError != nil {
			report.LastReload.Result, report.LastReload.Error = "failure", status.LastError.Error()
		}
	}
	for i, p := range chain.Plugins() {
		plugin := Plugin{Position: i + 1, Name: p.Name, DefaultOn: !defaultOff.Has(p.Name), Reloadable: reload.Reloadable.Has(p.Name), Config: "none"}
		if p.Mutating {
			plugin.Phases = append(plugin.Phases, "mutating")
		}
		if p.Validating {
			plugin.Phases = append(plugin.Phases, "validating")
		}
		if config, ok := status.Configs[p.Name]; ok {
			plugin.Config = "inline"
			if source, ok := status.Sources[p.Name]; ok {
				plugin.Config = source
			}
			plugin.ConfigSHA256 = fmt.Sprintf("%x", sha256.Sum256(config))
		}
		report.Plugins = append(report.Plugins, plugin)
	}
	return report
}

func writeText(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "admission chain")
	if r.ConfigFile == "" {
		fmt.Fprintln(tw, "configuration file:\tnone")
	} else {
		fmt.Fprintf(tw, "configuration file:\t%s (%s)\n", r.ConfigFile, r.ConfigHash)
	}
	switch {
	case r.LastReload == nil:
		fmt.Fprintln(tw, "last reload:\tnone")
	case r.LastReload.Error != "":
		fmt.Fprintf(tw, "last reload:\t%s failure: %s\n", r.LastReload.Time.Format(time.RFC3339), r.LastReload.Error)
	default:
		fmt.Fprintf(tw, "last reload:\t%s success\n", r.LastReload.Time.Format(time.RFC3339))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "#\tplugin\tphases\tdefault\treloadable\tconfiguration")
	for _, p := range r.Plugins {
		config := p.Config
		if p.ConfigSHA256 != "" {
			config += " sha256:" + p.ConfigSHA256[:12]
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", p.Position, p.Name, strings.Join(p.Phases, ","), onOff(p.DefaultOn), yesNo(p.Reloadable), config)
	}
	return tw.Flush()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
