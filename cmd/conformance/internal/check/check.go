// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package check is `conformance check DIR`: the checks cncf/k8s-conformance's
// bot (kubernetes-sigs/verify-conformance) applies to a submission folder, so
// that a submission is refused here, with the reason, before a reviewer sees
// it. It also reads the e2e framework's junit_01.xml for package suite.
package check

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"
)

// submissionFiles are the files a submission folder must hold.
var submissionFiles = []string{"README.md", "PRODUCT.yaml", "e2e.log", "junit_01.xml"}

// productFields are PRODUCT.yaml's required fields (cncf/k8s-conformance's
// instructions), and productTypes the values of its type.
var (
	productFields = []string{"vendor", "name", "version", "website_url", "repo_url", "documentation_url", "type", "description", "contact_email_address"}
	productTypes  = []string{"distribution", "hosted platform", "installer"}
)

// checkResult is one check, named as a reviewer would say it.
type checkResult struct {
	name string
	err  error
}

// Command is the check subcommand: its flags are args.
func Command(args []string) error {
	fs := flag.NewFlagSet("conformance check", flag.ContinueOnError)
	conformanceYAML := fs.String("conformance-yaml", "", "the release's test/conformance/testdata/conformance.yaml, which lists its [Conformance] specs (make conformance-check passes the pinned module's)")
	current := fs.String("current", "", "the newest Kubernetes release, main's line (make conformance-check passes it): a submission may be for its minor or one of the two before it")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: conformance check [flags] DIR\n\nDIR is a submission folder, v1.Y/<product>, as a pull request to cncf/k8s-conformance holds it.\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("check takes one folder")
	}
	if *current == "" {
		return errors.New("check: -current names the newest Kubernetes release (v1.Y.Z)")
	}
	if *conformanceYAML == "" {
		return errors.New("check: -conformance-yaml names the release's conformance.yaml (k8s.io/kubernetes's test/conformance/testdata/conformance.yaml)")
	}
	dir := fs.Arg(0)
	results := checkSubmission(dir, *conformanceYAML, *current)
	failed := 0
	for _, r := range results {
		if r.err != nil {
			failed++
			fmt.Printf("FAIL  %s\n      %s\n", r.name, strings.ReplaceAll(r.err.Error(), "\n", "\n      "))
		} else {
			fmt.Printf("ok    %s\n", r.name)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%s would be refused: %d of %d checks failed", dir, failed, len(results))
	}
	fmt.Printf("%s passes every check (%d)\n", dir, len(results))
	return nil
}

var minorFolder = regexp.MustCompile(`^v1\.[0-9]{2}$`)

// checkSubmission applies every check to dir and returns each result,
// in the order a reviewer reads them.
func checkSubmission(dir, conformanceYAML, current string) []checkResult {
	var results []checkResult
	add := func(name string, err error) { results = append(results, checkResult{name, err}) }

	files := map[string][]byte{}
	var missing []string
	for _, f := range submissionFiles {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			missing = append(missing, f)
			continue
		}
		files[f] = data
	}
	add("the folder holds README.md, PRODUCT.yaml, e2e.log and junit_01.xml, none of them empty",
		errIf(len(missing) > 0, "missing or empty: %s", strings.Join(missing, ", ")))

	abs, _ := filepath.Abs(dir)
	product, minor := filepath.Base(abs), filepath.Base(filepath.Dir(abs))
	add("the folder is v1.<minor>/<product>, one product of one release",
		errIf(!minorFolder.MatchString(minor) || product == "" || product == ".", "%s is not under a folder named like v1.37", abs))

	add("PRODUCT.yaml describes the product with every required field", checkProduct(files["PRODUCT.yaml"]))

	add(fmt.Sprintf("the release is the current one (%s) or one of the two before it", minorOfRelease(current)), checkSupported(minor, current))

	e2eVersion, err := e2eLogVersion(files["e2e.log"])
	if err == nil && minorOfRelease(e2eVersion) != minor {
		err = fmt.Errorf("e2e.log tested %s, and the folder is %s", e2eVersion, minor)
	}
	add("e2e.log says which Kubernetes it tested, and it is the folder's release", err)

	ran, err := e2eLogRan(files["e2e.log"])
	add("e2e.log ends in ginkgo's SUCCESS line, with no failed or pending spec", err)

	cases, err := JUnitCases(files["junit_01.xml"])
	if err != nil {
		add("junit_01.xml has every [Conformance] spec of the release, none failed", err)
		add("junit_01.xml and e2e.log count the same specs", err)
		return results
	}
	add("junit_01.xml has every [Conformance] spec of the release, none failed", checkSpecs(cases, conformanceYAML, minor))
	var specs int
	for _, c := range cases {
		if c.ran() {
			specs++
		}
	}
	add("junit_01.xml and e2e.log count the same specs",
		errIf(ran >= 0 && specs != ran, "e2e.log ran %d specs, junit_01.xml has %d that ran", ran, specs))
	return results
}

func errIf(cond bool, format string, args ...any) error {
	if cond {
		return fmt.Errorf(format, args...)
	}
	return nil
}

var yamlSeparator = regexp.MustCompile(`(?m)^---\s*$`)

func checkProduct(data []byte) error {
	if data == nil {
		return errors.New("no PRODUCT.yaml")
	}
	if docs := yamlSeparator.Split(strings.TrimSpace(string(data)), -1); len(docs) > 1 && strings.TrimSpace(docs[1]) != "" {
		return errors.New("PRODUCT.yaml holds more than one document: one product a submission")
	}
	var fields map[string]any
	if err := yaml.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("PRODUCT.yaml is not a YAML mapping: %w", err)
	}
	var problems []string
	for _, f := range productFields {
		s, ok := fields[f].(string)
		if !ok || strings.TrimSpace(s) == "" {
			problems = append(problems, f+" is missing or empty")
		}
	}
	if t, ok := fields["type"].(string); ok && t != "" && !slices.Contains(productTypes, t) {
		problems = append(problems, fmt.Sprintf("type %q is none of %s", t, strings.Join(productTypes, ", ")))
	}
	if e, ok := fields["contact_email_address"].(string); ok && e != "" && !strings.Contains(e, "@") {
		problems = append(problems, fmt.Sprintf("contact_email_address %q is not an address", e))
	}
	return errIf(len(problems) > 0, "%s", strings.Join(problems, "; "))
}

// minorOfRelease is v1.Y of v1.Y.Z.
func minorOfRelease(release string) string {
	v, err := version.ParseGeneric(release)
	if err != nil {
		return release
	}
	return fmt.Sprintf("v%d.%d", v.Major(), v.Minor())
}

func checkSupported(minor, current string) error {
	cur, err := version.ParseGeneric(current)
	if err != nil {
		return fmt.Errorf("the current release %q is not a version (-current)", current)
	}
	v, err := version.ParseGeneric(minor)
	if err != nil {
		return fmt.Errorf("the folder's release %q is not a version", minor)
	}
	switch {
	case v.Major() != cur.Major() || v.Minor() > cur.Minor():
		return fmt.Errorf("%s is newer than the current release %s", minor, minorOfRelease(current))
	case v.Minor()+2 < cur.Minor():
		return fmt.Errorf("%s is more than two minors older than the current release %s: certify on v1.%d or later", minor, minorOfRelease(current), cur.Minor()-2)
	}
	return nil
}

var (
	e2eVersionLine = regexp.MustCompile(`(?m)^.*e2e test version: (v1\.[0-9]{2}(\.[0-9]{1,2})?)\s*$`)
	ranLine        = regexp.MustCompile(`(?m)^Ran ([0-9]+) of [0-9]+ Specs? in `)
	outcomeLine    = regexp.MustCompile(`(?m)^(SUCCESS|FAIL)! -- ([0-9]+) Passed \| ([0-9]+) Failed \| ([0-9]+) Pending \| [0-9]+ Skipped`)
)

// e2eLogVersion is the version e2e.test logs as it starts.
func e2eLogVersion(log []byte) (string, error) {
	m := e2eVersionLine.FindSubmatch(log)
	if m == nil {
		return "", errors.New("e2e.log has no line `e2e test version: v1.Y.Z`")
	}
	return string(m[1]), nil
}

// e2eLogRan checks ginkgo's summaries in e2e.log (one per pass: a run in
// a parallel and a serial pass has two) and returns how many specs they
// ran, -1 when it cannot tell.
func e2eLogRan(log []byte) (int, error) {
	if log == nil {
		return -1, errors.New("no e2e.log")
	}
	outcomes := outcomeLine.FindAllSubmatch(log, -1)
	if len(outcomes) == 0 {
		return -1, errors.New("e2e.log has no ginkgo summary (SUCCESS! or FAIL! -- ...): the run did not finish")
	}
	for _, m := range outcomes {
		if string(m[1]) != "SUCCESS" || string(m[3]) != "0" || string(m[4]) != "0" {
			return -1, fmt.Errorf("e2e.log's summary says %q", strings.TrimSpace(string(m[0])))
		}
	}
	// The bot reads the last ten lines for the SUCCESS line.
	lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	tail := strings.Join(lines[max(0, len(lines)-10):], "\n")
	if !outcomeLine.MatchString(tail) {
		return -1, errors.New("e2e.log's last ten lines hold no SUCCESS line")
	}
	ran := 0
	for _, m := range ranLine.FindAllSubmatch(log, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		ran += n
	}
	return ran, nil
}

// JUnitCase is a testcase of junit_01.xml as the e2e framework writes it.
type JUnitCase struct {
	Name    string        `xml:"name,attr"`
	Status  string        `xml:"status,attr"`
	Time    float64       `xml:"time,attr"`
	Skipped *junitMessage `xml:"skipped"`
	Failure *junitMessage `xml:"failure"`
	Error   *junitMessage `xml:"error"`
}

// junitMessage is a case's <skipped>, <failure> or <error>.
type junitMessage struct {
	Message string `xml:"message,attr"`
}

// Spec is the case's spec name as conformance.yaml writes it: the e2e
// framework's report prefixes the leaf node's type, and escapes quotes.
func (c JUnitCase) Spec() string {
	return strings.TrimPrefix(html.UnescapeString(c.Name), "[It] ")
}

// IsSpec says whether the case is a spec rather than a suite node
// ([SynchronizedBeforeSuite], [ReportAfterSuite], ...).
func (c JUnitCase) IsSpec() bool {
	name := html.UnescapeString(c.Name)
	return strings.HasPrefix(name, "[It] ") || !strings.HasPrefix(name, "[") || strings.HasPrefix(name, "[sig-")
}

func (c JUnitCase) ran() bool {
	return c.IsSpec() && c.Skipped == nil && c.Status != "skipped"
}

// FailedStates are the ginkgo states of a spec that did not pass.
var FailedStates = []string{"failed", "panicked", "timedout", "interrupted", "aborted"}

func (c JUnitCase) Failed() bool {
	return c.Failure != nil || c.Error != nil || slices.Contains(FailedStates, c.Status)
}

func JUnitCases(data []byte) ([]JUnitCase, error) {
	if data == nil {
		return nil, errors.New("no junit_01.xml")
	}
	var doc struct {
		Suites []struct {
			Cases []JUnitCase `xml:"testcase"`
		} `xml:"testsuite"`
		Cases []JUnitCase `xml:"testcase"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("junit_01.xml: %w", err)
	}
	cases := doc.Cases
	for _, s := range doc.Suites {
		cases = append(cases, s.Cases...)
	}
	return cases, nil
}

// conformanceSpec is an entry of the release's conformance.yaml.
type conformanceSpec struct {
	Codename string `json:"codename"`
	Release  string `json:"release"`
}

// checkSpecs compares the cases with the release's [Conformance] specs:
// those of releases up to the folder's minor, as the bot counts them.
func checkSpecs(cases []JUnitCase, conformanceYAML, minor string) error {
	data, err := os.ReadFile(conformanceYAML)
	if err != nil {
		return err
	}
	var specs []conformanceSpec
	if err := yaml.Unmarshal(data, &specs); err != nil {
		return fmt.Errorf("%s: %w", conformanceYAML, err)
	}
	target, err := version.ParseGeneric(minor)
	if err != nil {
		return fmt.Errorf("the folder's release %q is not a version", minor)
	}
	passed := map[string]bool{}
	var failed []string
	for _, c := range cases {
		if !c.ran() || !strings.Contains(c.Name, "[Conformance]") {
			continue
		}
		if c.Failed() {
			failed = append(failed, c.Spec())
			continue
		}
		passed[c.Spec()] = true
	}
	var missing []string
	required := 0
	for _, s := range specs {
		if !releasedBy(s.Release, target) {
			continue
		}
		required++
		if !passed[s.Codename] && !slices.Contains(failed, s.Codename) {
			missing = append(missing, s.Codename)
		}
	}
	var problems []string
	if len(failed) > 0 {
		problems = append(problems, fmt.Sprintf("%d failed:\n  %s", len(failed), strings.Join(failed, "\n  ")))
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("%d of the release's %d are not there:\n  %s", len(missing), required, strings.Join(missing, "\n  ")))
	}
	if required == 0 {
		problems = append(problems, fmt.Sprintf("%s lists no spec of %s or earlier", conformanceYAML, minor))
	}
	return errIf(len(problems) > 0, "%s", strings.Join(problems, "\n"))
}

// releasedBy says whether a spec promoted in releases (a list such as
// "v1.9, v1.18") belongs to target's suite: any of them at or before it.
func releasedBy(releases string, target *version.Version) bool {
	for _, r := range strings.Split(releases, ",") {
		v, err := version.ParseGeneric(strings.TrimSpace(r))
		if err == nil && (v.Major() < target.Major() || v.Major() == target.Major() && v.Minor() <= target.Minor()) {
			return true
		}
	}
	return false
}

// message is what the case's <failure>, <error> or <skipped> says.
func (c JUnitCase) Message() string {
	for _, m := range []*junitMessage{c.Failure, c.Error, c.Skipped} {
		if m != nil {
			return m.Message
		}
	}
	return ""
}
