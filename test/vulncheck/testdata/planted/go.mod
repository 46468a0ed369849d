// A module that make vulncheck's test builds and scans: it requires
// golang.org/x/text v0.3.7, older than the fix of GO-2022-1059 (v0.3.8).
module github.com/turnstile-k8s/turnstile/test/vulncheck/testdata/planted

go 1.26.0

require golang.org/x/text v0.3.7
