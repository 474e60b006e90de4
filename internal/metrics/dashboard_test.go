package metrics_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/sketchd/sketchd/internal/metrics"
)

const dashboardPath = "../../deploy/grafana/sketchd.json"

// gPanel is the part of a Grafana panel the tests read.
type gPanel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	Targets    []struct {
		RefID      string          `json:"refId"`
		Expr       string          `json:"expr"`
		Datasource json.RawMessage `json:"datasource"`
	} `json:"targets"`
	Panels []gPanel `json:"panels"` // collapsed rows nest their panels
}

type gDashboard struct {
	UID           string   `json:"uid"`
	Title         string   `json:"title"`
	SchemaVersion int      `json:"schemaVersion"`
	Panels        []gPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func loadDashboard(tb testing.TB) gDashboard {
	tb.Helper()
	raw, err := os.ReadFile(dashboardPath)
	require.NoError(tb, err)
	require.True(tb, json.Valid(raw), "%s is not valid JSON", dashboardPath)
	var d gDashboard
	require.NoError(tb, json.Unmarshal(raw, &d))
	return d
}

// allPanels flattens rows.
func allPanels(ps []gPanel) []gPanel {
	var out []gPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// exportedFamilies returns the families a registry built the way
// cmd/sketchd builds it exports, after every method ran once.
func exportedFamilies(tb testing.TB) map[string]*dto.MetricFamily {
	tb.Helper()
	reg := metrics.NewRegistry()
	exerciseAll(metrics.New(reg, metrics.Options{Version: "t", Revision: "t", Source: newFakeSource(4)}))
	return scrape(tb, reg)
}

// resolves reports whether a series name used in a query is exported:
// either a family itself or a _bucket/_sum/_count series of a histogram
// (or _sum/_count of a summary).
func resolves(name string, fams map[string]*dto.MetricFamily) (family string, ok bool) {
	if mf, ok := fams[name]; ok && mf.GetType() != dto.MetricType_HISTOGRAM {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, found := strings.CutSuffix(name, suffix)
		if !found {
			continue
		}
		mf, ok := fams[base]
		if !ok {
			continue
		}
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			return base, true
		case dto.MetricType_SUMMARY:
			return base, suffix != "_bucket"
		}
	}
	return "", false
}

func TestDashboard(t *testing.T) {
	t.Parallel()
	d := loadDashboard(t)
	fams := exportedFamilies(t)

	require.NotEmpty(t, d.UID)
	require.NotEmpty(t, d.Title)
	require.GreaterOrEqual(t, d.SchemaVersion, 36)

	var varNames []string
	for _, v := range d.Templating.List {
		varNames = append(varNames, v.Name)
	}
	require.Contains(t, varNames, "datasource", "the dashboard needs a datasource variable")

	ids := map[int]string{}
	used := map[string]bool{}
	panels := allPanels(d.Panels)
	require.NotEmpty(t, panels)
	for _, p := range panels {
		t.Run(p.Title, func(t *testing.T) {
			require.NotZero(t, p.ID, "panel %q has no id", p.Title)
			if other, dup := ids[p.ID]; dup {
				t.Fatalf("panel id %d used by %q and %q", p.ID, other, p.Title)
			}
			ids[p.ID] = p.Title
			if p.Type == "row" {
				return
			}
			require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
			require.Contains(t, string(p.Datasource), "${datasource}", "panel %q datasource", p.Title)
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.RefID)
				require.Contains(t, string(tg.Datasource), "${datasource}", "panel %q target %s datasource", p.Title, tg.RefID)
				names, err := metricNames(tg.Expr)
				require.NoError(t, err, "panel %q target %s: %s", p.Title, tg.RefID, tg.Expr)
				require.NotEmpty(t, names, "panel %q target %s uses no metric: %s", p.Title, tg.RefID, tg.Expr)
				for _, n := range names {
					fam, ok := resolves(n, fams)
					if !ok {
						t.Errorf("panel %q target %s: %s is not exported by sketchd", p.Title, tg.RefID, n)
						continue
					}
					used[fam] = true
				}
			}
		})
	}

	t.Run("variables", func(t *testing.T) {
		labelValues := regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			var q struct {
				Query string `json:"query"`
			}
			s := ""
			if json.Unmarshal(v.Query, &s) != nil {
				require.NoError(t, json.Unmarshal(v.Query, &q), "variable %s query", v.Name)
				s = q.Query
			}
			for _, m := range labelValues.FindAllStringSubmatch(s, -1) {
				if _, ok := resolves(m[1], fams); !ok {
					t.Errorf("variable %s: %s is not exported by sketchd", v.Name, m[1])
				}
			}
		}
	})

	// Every sketchd family is on the dashboard, so a new metric gets a panel.
	t.Run("every family shown", func(t *testing.T) {
		for name := range fams {
			if strings.HasPrefix(name, "sketchd_") && !used[name] {
				t.Errorf("%s is exported but no panel shows it", name)
			}
		}
	})
}

// promqlKeywords are words in an expression that are not metric names even
// when no '(' follows them.
var promqlKeywords = []string{
	"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
	"bottomk", "topk", "quantile", "limitk", "limit_ratio",
	"by", "without", "on", "ignoring", "group_left", "group_right",
	"bool", "and", "or", "unless", "offset", "atan2", "inf", "nan",
}

// metricNames returns the metric names a PromQL expression selects. It is a
// small lexer, enough for dashboard queries: it skips strings, label
// matchers {…}, ranges […], Grafana $variables, numbers and durations,
// function calls and the label lists of by/without/on/ignoring/group_*.
func metricNames(expr string) ([]string, error) {
	var names []string
	skipList := false // the next '(' opens a label list
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, errUnterminated("string", expr)
			}
			i = j + 1
		case c == '{' || c == '[':
			end := byte('}')
			if c == '[' {
				end = ']'
			}
			j := i + 1
			for j < len(expr) && expr[j] != end {
				if q := expr[j]; q == '"' || q == '\'' || q == '`' {
					j++
					for j < len(expr) && expr[j] != q {
						if expr[j] == '\\' && q != '`' {
							j++
						}
						j++
					}
				}
				j++
			}
			if j >= len(expr) {
				return nil, errUnterminated(string(c), expr)
			}
			i = j + 1
		case c == '(' && skipList:
			j := strings.IndexByte(expr[i:], ')')
			if j < 0 {
				return nil, errUnterminated("label list", expr)
			}
			i += j + 1
			skipList = false
		case c == '$':
			j := i + 1
			for j < len(expr) && (isIdent(expr[j]) || expr[j] == '{' || expr[j] == '}') {
				j++
			}
			i = j
		case c >= '0' && c <= '9' || c == '.':
			j := i + 1
			for j < len(expr) && (isIdent(expr[j]) || expr[j] == '.' ||
				(expr[j] == '+' || expr[j] == '-') && (expr[j-1] == 'e' || expr[j-1] == 'E')) {
				j++
			}
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			word := expr[i:j]
			i = j
			k := j
			for k < len(expr) && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n') {
				k++
			}
			switch {
			case slices.Contains([]string{"by", "without", "on", "ignoring", "group_left", "group_right"}, word):
				skipList = true
			case slices.Contains(promqlKeywords, word):
			case k < len(expr) && expr[k] == '(':
				// a function call
			default:
				if !slices.Contains(names, word) {
					names = append(names, word)
				}
			}
		default:
			i++
		}
	}
	return names, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdent(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

type unterminatedError struct{ what, expr string }

func (e unterminatedError) Error() string { return "unterminated " + e.what + " in " + e.expr }

func errUnterminated(what, expr string) error { return unterminatedError{what, expr} }

func TestMetricNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want []string
	}{
		{`sketchd_db_size_bytes`, []string{"sketchd_db_size_bytes"}},
		{`rate(sketchd_ingested_total{kind="hll"}[5m])`, []string{"sketchd_ingested_total"}},
		{
			`histogram_quantile(0.99, sum by (le, route) (rate(sketchd_http_request_duration_seconds_bucket{instance=~"$instance", route!~"a}b"}[$__rate_interval])))`,
			[]string{"sketchd_http_request_duration_seconds_bucket"},
		},
		{
			`sum without(code) (rate(a_total[1m])) / on (route) group_left(x) sum(rate(b_count[1m] offset 5m)) > bool 1e-3`,
			[]string{"a_total", "b_count"},
		},
		{`sum(rate(x_sum[5m])) / sum(rate(x_count[5m]))`, []string{"x_sum", "x_count"}},
		{`max_over_time(sketchd_wal_size_bytes[${__range}]) or vector(0)`, []string{"sketchd_wal_size_bytes"}},
		{`topk(10, sketchd_sketch_estimate{name=~"$sketch"})`, []string{"sketchd_sketch_estimate"}},
		{`count by (version) (sketchd_build_info)`, []string{"sketchd_build_info"}},
		{`1 + 2`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			got, err := metricNames(tt.expr)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	for _, bad := range []string{`rate(x{a="b}`, `x[5m`, `sum by (a`} {
		if got, err := metricNames(bad); err == nil {
			t.Errorf("metricNames(%q) = %v, nil; want an error", bad, got)
		}
	}
}

// goList lists the non-standard packages internal/metrics depends on.
func goList(tb testing.TB) (string, error) {
	tb.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("go command not in PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	return string(out), err
}
