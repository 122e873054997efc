// Package browsertest renders the project's HTML pages in a real browser,
// headless Chromium, for tests: whether every image is displayed, no script
// failed, nothing was fetched from the network, and nothing is wider than the
// window (a table or picture that overflows the page), and a screenshot. Tests
// of the HTML report use it.
package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Chromium finds a headless-capable Chromium. In CI (CI set) a missing browser
// fails the test: scripts/test.sh installs it. Elsewhere the test is skipped.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not found and CI is set: scripts/test.sh installs it (apt-get install -y chromium)")
	}
	t.Skip("chromium not found: install it (apt-get install -y chromium) to render the report")
	return ""
}

// Run runs the browser headless with the profile directory and args, and
// returns its standard output.
func Run(t testing.TB, bin, profile string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + profile}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.String())
	}
	return stdout.Bytes()
}

// probe runs before the page's own content and records, once the page has
// loaded, script errors, images not displayed, any request that left the page,
// and every element wider than the window (the page must read without scrolling
// sideways), but for what a <details> folds away: a table of every column,
// which scrolls in its own box.
const probe = `<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message || (e.target && e.target.src) || e)); }, true);
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var broken = imgs.filter(function (i) { return !i.complete || i.naturalWidth === 0; }).map(function (i) { return i.alt; });
  var net = performance.getEntriesByType("resource").map(function (r) { return r.name; }).filter(function (n) { return n.indexOf("data:") !== 0; });
  var width = document.documentElement.clientWidth, wide = [];
  Array.prototype.forEach.call(document.querySelectorAll("table, img, pre, figure, p"), function (el) {
    var r = el.getBoundingClientRect();
    if (el.closest("details")) { return; }
    if (r.right > width + 1) { wide.push(el.tagName.toLowerCase() + " " + (el.querySelector && el.querySelector("caption") ? el.querySelector("caption").textContent : (el.alt || el.textContent.slice(0, 40))) + ": right edge " + Math.round(r.right) + " px"); }
  });
  if (document.documentElement.scrollWidth > width + 1) { wide.push("the page: " + document.documentElement.scrollWidth + " px"); }
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = "PROBE " + JSON.stringify({images: imgs.length, broken: broken, errors: window.__errors, requests: net, wide: wide, width: width}) + " END";
  document.body.appendChild(out);
});
</script>`

// Page is what the browser saw of a page.
type Page struct {
	Images   int      `json:"images"`
	Broken   []string `json:"broken"`   // images not displayed (their alt texts)
	Errors   []string `json:"errors"`   // script and loading errors
	Requests []string `json:"requests"` // resources fetched from outside the page
	Wide     []string `json:"wide"`     // elements whose right edge is past the window's
	Width    int      `json:"width"`    // the window's width, CSS pixels
}

// Load renders the HTML file at path in a window width pixels wide, with the
// probe, and returns what it saw; a screenshot of the page goes to shot when it
// is not empty.
func Load(t testing.TB, bin, path string, width int, shot string) Page {
	t.Helper()
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	probed := strings.Replace(string(html), "<head>", "<head>\n"+probe, 1)
	page := filepath.Join(filepath.Dir(path), "probed-"+filepath.Base(path))
	if err := os.WriteFile(page, []byte(probed), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(page)
	profile := t.TempDir()
	size := "--window-size=" + strconv.Itoa(width) + ",2400"
	dom := Run(t, bin, profile, size, "--virtual-time-budget=10000", "--dump-dom", "file://"+page)
	m := regexp.MustCompile(`PROBE (\{.*?\}) END`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe did not report; the page did not load:\n%.2000s", dom)
	}
	var p Page
	if err := json.Unmarshal(unescape(m[1]), &p); err != nil {
		t.Fatalf("the probe's report %s: %v", m[1], err)
	}
	if shot != "" {
		Run(t, bin, profile, size, "--hide-scrollbars", "--screenshot="+shot, "file://"+path)
	}
	return p
}

// unescape undoes the HTML escaping --dump-dom gives a <pre>'s text.
func unescape(b []byte) []byte {
	r := strings.NewReplacer("&quot;", `"`, "&lt;", "<", "&gt;", ">", "&#39;", "'", "&amp;", "&")
	return []byte(r.Replace(string(b)))
}
